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
)

// WriteFiles writes results.json, results.csv and chart.svg into dir,
// creating it if needed.
func WriteFiles(dir string, rep Report) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for name, write := range map[string]func(io.Writer, Report) error{
		"results.json": WriteJSON,
		"results.csv":  WriteCSV,
		"chart.svg":    WriteSVG,
	} {
		if err := writeFile(filepath.Join(dir, name), rep, write); err != nil {
			return err
		}
	}
	return nil
}

func writeFile(path string, rep Report, write func(io.Writer, Report) error) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := write(f, rep); err != nil {
		_ = f.Close()
		return fmt.Errorf("bench: write %s: %w", path, err)
	}
	return f.Close()
}

// WriteJSON writes the report, metadata and results, as indented JSON.
func WriteJSON(w io.Writer, rep Report) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(rep)
}

// WriteCSV writes the results with a header row. Columns are Result's
// fields under their JSON names, so the two files never disagree;
// server_commands is the total. A figure that is n/a is an empty field,
// never 0. The metadata is in the JSON only.
func WriteCSV(w io.Writer, rep Report) error {
	t := reflect.TypeFor[Result]()
	header := make([]string, t.NumField())
	for i := range header {
		header[i], _, _ = strings.Cut(t.Field(i).Tag.Get("json"), ",")
	}
	cw := csv.NewWriter(w)
	_ = cw.Write(header) // errors stick; cw.Error reports them
	for _, r := range rep.Results {
		v := reflect.ValueOf(r)
		row := make([]string, len(header))
		for i := range row {
			row[i] = csvCell(v.Field(i))
		}
		_ = cw.Write(row)
	}
	cw.Flush()
	return cw.Error()
}

func csvCell(v reflect.Value) string {
	if v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return ""
		}
		v = v.Elem()
	}
	switch x := v.Interface().(type) {
	case time.Duration:
		return strconv.FormatInt(int64(x), 10)
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64)
	case map[string]int64: // server commands: their total
		if x == nil {
			return ""
		}
		var total int64
		for _, n := range x {
			total += n
		}
		return strconv.FormatInt(total, 10)
	}
	return fmt.Sprint(v.Interface()) // strings and integers
}
