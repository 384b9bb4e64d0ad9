package bench

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/batonlock/baton/reentrant/redistest/redisproc"
)

// WriteFiles writes results.json, results.csv and chart.svg into dir,
// creating it if needed.
func WriteFiles(dir string, results []Result) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for name, write := range map[string]func(io.Writer, []Result) error{
		"results.json": WriteJSON,
		"results.csv":  WriteCSV,
		"chart.svg":    WriteSVG,
	} {
		if err := writeFile(filepath.Join(dir, name), results, write); err != nil {
			return err
		}
	}
	return nil
}

func writeFile(path string, results []Result, write func(io.Writer, []Result) error) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := write(f, results); err != nil {
		_ = f.Close()
		return fmt.Errorf("bench: write %s: %w", path, err)
	}
	return f.Close()
}

// WriteJSON writes results as an indented JSON array.
func WriteJSON(w io.Writer, results []Result) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(results)
}

// WriteCSV writes results with a header row. Columns are Result's fields
// under their JSON names, so the two files never disagree; server_commands
// is the total, empty when the server has no commandstats.
func WriteCSV(w io.Writer, results []Result) error {
	t := reflect.TypeFor[Result]()
	header := make([]string, t.NumField())
	for i := range header {
		header[i], _, _ = strings.Cut(t.Field(i).Tag.Get("json"), ",")
	}
	cw := csv.NewWriter(w)
	_ = cw.Write(header) // errors stick; cw.Error reports them
	for _, r := range results {
		v := reflect.ValueOf(r)
		row := make([]string, len(header))
		for i := range row {
			row[i] = csvCell(v.Field(i).Interface())
		}
		_ = cw.Write(row)
	}
	cw.Flush()
	return cw.Error()
}

func csvCell(v any) string {
	switch v := v.(type) {
	case time.Duration:
		return strconv.FormatInt(int64(v), 10)
	case float64:
		return strconv.FormatFloat(v, 'g', -1, 64)
	case redisproc.CommandStats:
		if v == nil {
			return ""
		}
		return strconv.FormatInt(v.Total(), 10)
	}
	return fmt.Sprint(v) // strings and integers
}
