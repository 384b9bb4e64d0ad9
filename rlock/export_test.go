package rlock

// SetAfterFirstAttempt installs a hook that runs between step 1 (the first
// failed acquire) and step 2 (the subscribe) of the wait loop.
func (c *Client) SetAfterFirstAttempt(f func()) { c.afterFirstAttempt = f }

// SetBeforeJoin installs a hook that runs in adopt between finding the hold
// to join and joining it.
func (c *Client) SetBeforeJoin(f func()) { c.beforeJoin = f }
