package rlock

import "github.com/batonlock/baton/reentrant"

// SetAfterFirstAttempt installs a hook that runs between step 1 (the first
// failed acquire) and step 2 (the subscribe) of the wait loop.
func (c *Client) SetAfterFirstAttempt(f func()) { c.afterFirstAttempt = f }

// SetBeforeJoin installs a hook that runs in adopt between finding the hold
// to join and joining it.
func (c *Client) SetBeforeJoin(f func()) { c.beforeJoin = f }

// lockKeys are the keys of the plain lock called name.
func (c *Client) lockKeys(name string) (reentrant.Keys, error) {
	p, err := c.lockResource(name)
	if err != nil {
		return reentrant.Keys{}, err
	}
	return p.keys, nil
}
