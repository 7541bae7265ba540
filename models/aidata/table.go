// Package aidata reads tabular data — CSV, JSON rows or a Markdown table —
// and computes the numbers of an AI analysis in code: per column count, sum,
// mean, min, max and a trend, per group when asked. A model only ever
// narrates these numbers; it never computes them.
package aidata

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// Input formats.
const (
	FormatCSV      = "csv"
	FormatJSON     = "json"
	FormatMarkdown = "markdown"
)

// Limits keep one analysis bounded.
const (
	MaxColumns = 100
	MaxRows    = 100_000
)

// Table is parsed data: named columns and rows of cell text ("" is a
// missing value).
type Table struct {
	Format  string
	Columns []string
	Rows    [][]string
}

// ErrNoTable is returned when a text holds no table to analyse.
var ErrNoTable = errors.New("no table found")

// Parse reads text in format (FormatCSV, FormatJSON, FormatMarkdown), or
// detects the format when format is "": JSON when the text starts with [ or
// {, else the first Markdown table in it, else CSV (comma, semicolon or tab
// separated, header first). Detected CSV must have two columns or more, so
// that prose is not mistaken for a one-column table.
func Parse(text, format string) (*Table, error) {
	trimmed := strings.TrimSpace(text)
	if trimmed == "" {
		return nil, ErrNoTable
	}
	var t *Table
	var err error
	switch format {
	case FormatJSON:
		t, err = parseJSON(trimmed)
	case FormatCSV:
		t, err = parseCSV(trimmed)
	case FormatMarkdown:
		t, err = parseMarkdown(trimmed)
	case "":
		switch {
		case trimmed[0] == '[' || trimmed[0] == '{':
			t, err = parseJSON(trimmed)
		default:
			t, err = parseMarkdown(trimmed)
			if errors.Is(err, ErrNoTable) {
				t, err = parseCSV(trimmed)
				if err == nil && len(t.Columns) < 2 {
					err = ErrNoTable
				}
			}
		}
	default:
		return nil, fmt.Errorf("unknown data format %q", format)
	}
	if err != nil {
		return nil, err
	}
	if len(t.Rows) == 0 {
		return nil, errors.New("the table has a header but no rows")
	}
	if len(t.Columns) > MaxColumns {
		return nil, fmt.Errorf("the table has %d columns; at most %d are analysed", len(t.Columns), MaxColumns)
	}
	if len(t.Rows) > MaxRows {
		return nil, fmt.Errorf("the table has %d rows; at most %d are analysed", len(t.Rows), MaxRows)
	}
	return t, nil
}

func parseCSV(text string) (*Table, error) {
	r := csv.NewReader(strings.NewReader(text))
	r.Comma = delimiter(text)
	r.FieldsPerRecord = -1
	r.LazyQuotes = true
	r.TrimLeadingSpace = true
	header, err := r.Read()
	if err != nil {
		return nil, fmt.Errorf("CSV: %w", err)
	}
	t := &Table{Format: FormatCSV, Columns: columnNames(header)}
	for {
		rec, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("CSV: %w", err)
		}
		if len(rec) > len(t.Columns) {
			line, _ := r.FieldPos(0)
			return nil, fmt.Errorf("CSV line %d has %d fields; the header has %d", line, len(rec), len(t.Columns))
		}
		if len(rec) == 1 && strings.TrimSpace(rec[0]) == "" {
			continue
		}
		t.Rows = append(t.Rows, padRow(rec, len(t.Columns)))
		if len(t.Rows) > MaxRows {
			break
		}
	}
	return t, nil
}

// delimiter picks the separator the header line uses most.
func delimiter(text string) rune {
	first, _, _ := strings.Cut(text, "\n")
	best, n := ',', strings.Count(first, ",")
	for _, d := range []rune{';', '\t'} {
		if c := strings.Count(first, string(d)); c > n {
			best, n = d, c
		}
	}
	return best
}

func parseMarkdown(text string) (*Table, error) {
	lines := strings.Split(text, "\n")
	for i := 0; i+1 < len(lines); i++ {
		head, sep := strings.TrimSpace(lines[i]), strings.TrimSpace(lines[i+1])
		if !strings.HasPrefix(head, "|") || !isSeparator(sep) {
			continue
		}
		t := &Table{Format: FormatMarkdown, Columns: columnNames(markdownCells(head))}
		for _, l := range lines[i+2:] {
			l = strings.TrimSpace(l)
			if !strings.HasPrefix(l, "|") {
				break
			}
			t.Rows = append(t.Rows, padRow(markdownCells(l), len(t.Columns)))
		}
		return t, nil
	}
	return nil, ErrNoTable
}

func isSeparator(l string) bool {
	if !strings.HasPrefix(l, "|") || !strings.Contains(l, "-") {
		return false
	}
	return strings.Trim(l, "|-: ") == ""
}

func markdownCells(l string) []string {
	l = strings.TrimSuffix(strings.TrimPrefix(l, "|"), "|")
	cells := strings.Split(l, "|")
	for i := range cells {
		cells[i] = strings.TrimSpace(cells[i])
	}
	return cells
}

// parseJSON reads an array of objects, or an object holding one under
// "rows" or "data". Columns appear in the order keys are first seen.
func parseJSON(text string) (*Table, error) {
	dec := json.NewDecoder(strings.NewReader(text))
	dec.UseNumber()
	var raw json.RawMessage
	if err := dec.Decode(&raw); err != nil {
		return nil, fmt.Errorf("JSON: %w", err)
	}
	raw = bytes.TrimSpace(raw)
	if len(raw) > 0 && raw[0] == '{' {
		var wrapper map[string]json.RawMessage
		if err := json.Unmarshal(raw, &wrapper); err != nil {
			return nil, fmt.Errorf("JSON: %w", err)
		}
		inner, ok := wrapper["rows"]
		if !ok {
			inner, ok = wrapper["data"]
		}
		if !ok {
			return nil, errors.New(`JSON data must be an array of row objects, or an object with "rows"`)
		}
		raw = bytes.TrimSpace(inner)
	}
	var rows []json.RawMessage
	if err := json.Unmarshal(raw, &rows); err != nil {
		return nil, errors.New("JSON data must be an array of row objects")
	}
	t := &Table{Format: FormatJSON}
	index := map[string]int{}
	var objects []map[string]string
	for i, r := range rows {
		keys, values, err := orderedObject(r)
		if err != nil {
			return nil, fmt.Errorf("JSON row %d: %w", i+1, err)
		}
		obj := map[string]string{}
		for k, key := range keys {
			if _, seen := index[key]; !seen {
				index[key] = len(t.Columns)
				t.Columns = append(t.Columns, key)
			}
			obj[key] = values[k]
		}
		objects = append(objects, obj)
	}
	for _, obj := range objects {
		row := make([]string, len(t.Columns))
		for k, v := range obj {
			row[index[k]] = v
		}
		t.Rows = append(t.Rows, row)
	}
	return t, nil
}

// orderedObject decodes one JSON object keeping its key order; values
// become cell text (numbers as written, null as missing, nested values as
// compact JSON).
func orderedObject(raw json.RawMessage) ([]string, []string, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	tok, err := dec.Token()
	if err != nil || tok != json.Delim('{') {
		return nil, nil, errors.New("not an object")
	}
	var keys, values []string
	for dec.More() {
		kt, err := dec.Token()
		if err != nil {
			return nil, nil, err
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, nil, err
		}
		keys = append(keys, kt.(string))
		values = append(values, cellText(v))
	}
	return keys, values, nil
}

func cellText(v json.RawMessage) string {
	s := string(bytes.TrimSpace(v))
	switch {
	case s == "null":
		return ""
	case strings.HasPrefix(s, `"`):
		var str string
		_ = json.Unmarshal(v, &str)
		return str
	default:
		return s
	}
}

// columnNames trims header cells, names blank ones column_N and makes
// duplicates unique (name_2, name_3…).
func columnNames(header []string) []string {
	seen := map[string]int{}
	out := make([]string, len(header))
	for i, h := range header {
		name := strings.TrimSpace(strings.TrimPrefix(h, "\ufeff"))
		if name == "" {
			name = "column_" + strconv.Itoa(i+1)
		}
		seen[name]++
		if n := seen[name]; n > 1 {
			name += "_" + strconv.Itoa(n)
		}
		out[i] = name
	}
	return out
}

func padRow(rec []string, n int) []string {
	row := make([]string, n)
	for i := range rec {
		if i < n {
			row[i] = strings.TrimSpace(rec[i])
		}
	}
	return row
}
