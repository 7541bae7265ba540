package models

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Reading an import's file: CSV (RFC 4180, quotes tolerated inside
// unquoted cells) with a header row, or NDJSON, one object per line. The
// stored file is UTF-8 without a byte-order mark (the API converted a
// Latin-1 upload when it stored it).

// NewImportCSV is a CSV reader as imports read files: any number of cells
// a row (a ragged row fails by itself), quotes inside a cell tolerated.
func NewImportCSV(r io.Reader) *csv.Reader {
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = -1
	cr.LazyQuotes = true
	cr.ReuseRecord = true
	return cr
}

// formulaStart are the first characters that make a spreadsheet run a
// cell (OWASP's CSV injection list).
const formulaStart = "=+-@\t\r"

// NeutralizeCell prefixes a cell a spreadsheet would run as a formula
// with an apostrophe, as an export writes it.
func NeutralizeCell(s string) string {
	if s != "" && strings.ContainsRune(formulaStart, rune(s[0])) {
		return "'" + s
	}
	return s
}

// unneutralize undoes NeutralizeCell: an exported file imports as it
// was. Any other cell is kept verbatim, formula or not.
func unneutralize(s string) string {
	if len(s) > 1 && s[0] == '\'' && strings.ContainsRune(formulaStart, rune(s[1])) {
		return s[1:]
	}
	return s
}

// MaxRecordBytes is the most one row of an import's file may span (a CSV
// record, an NDJSON line): an unclosed quote makes the rest of a file one
// record, which fails the import (ErrRecordTooLong) rather than be held
// whole in a worker's memory.
var MaxRecordBytes int64 = 64 << 20

// chunkSoftBytes ends a chunk early, between rows: a chunk of rows with
// large cells reads fewer rows.
const chunkSoftBytes = 16 << 20

// ErrRecordTooLong is a row of an import's file over MaxRecordBytes.
var ErrRecordTooLong = errors.New("a row spans more than the limit")

// recordCap passes through what its reader reads, up to MaxRecordBytes
// past the start of the row being read (allow moves it after each row),
// and fails with ErrRecordTooLong beyond.
type recordCap struct {
	r           io.Reader
	read, limit int64
}

func newRecordCap(r io.Reader) *recordCap { return &recordCap{r: r, limit: MaxRecordBytes} }

// allow lets the reader read MaxRecordBytes past offset (a row's start).
func (c *recordCap) allow(offset int64) { c.limit = offset + MaxRecordBytes }

func (c *recordCap) Read(p []byte) (int, error) {
	if c.read >= c.limit {
		return 0, ErrRecordTooLong
	}
	if left := c.limit - c.read; int64(len(p)) > left {
		p = p[:left]
	}
	n, err := c.r.Read(p)
	c.read += int64(n)
	return n, err
}

// tooLong is ErrRecordTooLong with the line the row starts on.
func tooLong(line int64) error {
	return fmt.Errorf("%w of %d MiB: the row that starts on line %d (an unclosed quote?)", ErrRecordTooLong, MaxRecordBytes>>20, line)
}

// ImportChunk is the rows of one chunk of an import's file, the rows
// that failed before they were read as fields (a malformed line, a
// ragged row), and where the next chunk starts.
type ImportChunk struct {
	Rows   []ImportRow
	Failed []ImportError
	// FailedRows is how many rows Failed's problems are of.
	FailedRows int64
	Read       int64
	Next       int64
	NextLine   int64
	EOF        bool
}

// ReadImportChunk reads up to max rows of imp's file from r, which
// starts at the file's byte offset from (line line), mapping each
// record's cells to fields (ImportObject.Target).
func ReadImportChunk(r io.Reader, imp *Import, defs []CustomField, from, line int64, max int) (*ImportChunk, error) {
	o := ImportObjects[imp.Object]
	if o == nil {
		return nil, fmt.Errorf("import %s: no object %s", imp.ID, imp.Object)
	}
	mapping := imp.MappingOf()
	out := &ImportChunk{Next: from, NextLine: line}
	if imp.Format == FormatNDJSON {
		return out, readNDJSON(newRecordCap(r), imp, o, mapping, defs, out, max)
	}
	byColumn := map[int]string{}
	for i, col := range imp.ColumnList() {
		if to, ok := o.Target(col, mapping, defs); ok && to != "" {
			byColumn[i] = to
		}
	}
	byKey := customFieldsByKey(defs)
	width := len(imp.ColumnList())
	// The bytes read are kept, to count the lines the chunk's rows took
	// (a quoted cell may hold line breaks): the next chunk's first line.
	var seen bytes.Buffer
	capped := newRecordCap(r)
	cr := NewImportCSV(io.TeeReader(capped, &seen))
	nextLine := func() int64 { return line + int64(bytes.Count(seen.Bytes()[:out.Next-from], []byte{'\n'})) }
	defer func() { out.NextLine = nextLine() }()
	for len(out.Rows)+int(out.FailedRows) < max && out.Next-from < chunkSoftBytes {
		record, err := cr.Read()
		if errors.Is(err, io.EOF) {
			out.EOF = true
			break
		}
		if errors.Is(err, ErrRecordTooLong) {
			return nil, tooLong(nextLine())
		}
		out.Next = from + cr.InputOffset()
		capped.allow(cr.InputOffset())
		out.Read++
		if err != nil {
			var perr *csv.ParseError
			if !errors.As(err, &perr) {
				return nil, err
			}
			out.Failed = append(out.Failed, ImportError{ImportID: imp.ID, Line: line + int64(perr.StartLine) - 1, Reason: perr.Err.Error()})
			out.FailedRows++
			continue
		}
		startLine, _ := cr.FieldPos(0)
		rowLine := line + int64(startLine) - 1
		if len(record) != width {
			if len(record) == 1 && strings.TrimSpace(record[0]) == "" {
				out.Rows = append(out.Rows, ImportRow{Line: rowLine, Values: map[string]string{}})
				continue
			}
			out.Failed = append(out.Failed, ImportError{ImportID: imp.ID, Line: rowLine,
				Reason: fmt.Sprintf("The row has %d cells; the header has %d.", len(record), width)})
			out.FailedRows++
			continue
		}
		row := ImportRow{Line: rowLine, Values: map[string]string{}}
		for i, cell := range record {
			to := byColumn[i]
			cell = unneutralize(cell)
			switch {
			case to == "":
			case strings.HasPrefix(to, "fields."):
				if f := byKey[strings.TrimPrefix(to, "fields.")]; f != nil && strings.TrimSpace(cell) != "" {
					if row.Fields == nil {
						row.Fields = map[string]json.RawMessage{}
					}
					row.Fields[f.Key] = ImportCell(f, strings.TrimSpace(cell))
				}
			default:
				row.Values[to] = cell
			}
		}
		out.Rows = append(out.Rows, row)
	}
	return out, nil
}

// errorColumn is a column's name as an error file records it: a name from
// the file (an NDJSON key) cut to 200 bytes, which a key of the errors'
// table holds.
func errorColumn(name string) string {
	if len(name) <= 200 {
		return name
	}
	cut := name[:200]
	for !utf8.ValidString(cut) {
		cut = cut[:len(cut)-1]
	}
	return cut
}

// customFieldsByKey are the active definitions by key.
func customFieldsByKey(defs []CustomField) map[string]*CustomField {
	out := map[string]*CustomField{}
	for i := range defs {
		if defs[i].Status == FieldActive {
			out[defs[i].Key] = &defs[i]
		}
	}
	return out
}

// readNDJSON reads up to max lines of NDJSON into out: each an object of
// the object's fields as the API shows them, custom fields under
// "fields".
func readNDJSON(capped *recordCap, imp *Import, o *ImportObject, mapping map[string]string, defs []CustomField, out *ImportChunk, max int) error {
	br := bufio.NewReaderSize(capped, 64<<10)
	start := out.Next
	for len(out.Rows)+int(out.FailedRows) < max && out.Next-start < chunkSoftBytes {
		capped.allow(out.Next - start)
		raw, err := br.ReadBytes('\n')
		if len(raw) == 0 && errors.Is(err, io.EOF) {
			out.EOF = true
			return nil
		}
		if errors.Is(err, ErrRecordTooLong) {
			return tooLong(out.NextLine)
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return err
		}
		line := out.NextLine
		out.Next += int64(len(raw))
		out.NextLine++
		if raw = bytes.TrimSpace(raw); len(raw) == 0 {
			continue // a blank line is no row (as in a CSV)
		}
		out.Read++
		row, problems := ndjsonRow(raw, line, o, mapping, defs)
		if len(problems) > 0 {
			for _, p := range problems {
				out.Failed = append(out.Failed, ImportError{ImportID: imp.ID, Line: line, Column: errorColumn(p.Field), Reason: p.Message})
			}
			out.FailedRows++
			continue
		}
		out.Rows = append(out.Rows, row)
	}
	return nil
}

// ndjsonRow reads one NDJSON line as a row.
func ndjsonRow(raw []byte, line int64, o *ImportObject, mapping map[string]string, defs []CustomField) (ImportRow, []FieldError) {
	row := ImportRow{Line: line, Values: map[string]string{}}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil {
		return row, []FieldError{{Code: "invalid", Message: "Not a JSON object."}}
	}
	var bad []FieldError
	put := func(name string, v json.RawMessage) {
		to, ok := o.Target(name, mapping, defs)
		switch {
		case !ok:
			bad = append(bad, FieldError{Field: name, Code: "unknown_field", Message: "No field " + name + " on " + o.Name + "."})
		case to == "" || string(v) == "null":
		case strings.HasPrefix(to, "fields."):
			if row.Fields == nil {
				row.Fields = map[string]json.RawMessage{}
			}
			row.Fields[strings.TrimPrefix(to, "fields.")] = v
		default:
			var s string
			var list []string // a list (a ticket's tags) is its items separated by ";", as in a CSV
			var n float64     // a number (a deal's amount) is its text, as in a CSV
			switch {
			case json.Unmarshal(v, &s) == nil:
			case json.Unmarshal(v, &list) == nil:
				s = strings.Join(list, ";")
			case json.Unmarshal(v, &n) == nil:
				s = strconv.FormatFloat(n, 'f', -1, 64)
			default:
				bad = append(bad, FieldError{Field: name, Code: "invalid", Message: "A string."})
				return
			}
			row.Values[to] = s
		}
	}
	for name, v := range obj {
		if name != "fields" {
			put(name, v)
			continue
		}
		var fields map[string]json.RawMessage
		if err := json.Unmarshal(v, &fields); err != nil && string(v) != "null" {
			bad = append(bad, FieldError{Field: "fields", Code: "invalid", Message: "An object of custom field values."})
		}
		for key, fv := range fields {
			put("fields."+key, fv)
		}
	}
	return row, bad
}

// CountImportRows counts the rows of an import's file from r (after the
// CSV's header): its total.
func CountImportRows(r io.Reader, format string, progress func(offset int64)) (int64, error) {
	var n int64
	if format == FormatNDJSON {
		br := bufio.NewReaderSize(r, 64<<10)
		var offset int64
		blank := true
		for {
			raw, err := br.ReadSlice('\n')
			offset += int64(len(raw))
			blank = blank && len(bytes.TrimSpace(raw)) == 0
			if ended := len(raw) > 0 && raw[len(raw)-1] == '\n'; ended || errors.Is(err, io.EOF) {
				if !blank {
					n++
				}
				blank = true
			}
			if errors.Is(err, io.EOF) {
				return n, nil
			}
			if err != nil && !errors.Is(err, bufio.ErrBufferFull) {
				return 0, err
			}
			if n%50_000 == 0 {
				progress(offset)
			}
		}
	}
	capped := newRecordCap(r)
	cr := NewImportCSV(capped)
	for {
		_, err := cr.Read()
		if errors.Is(err, io.EOF) {
			return n, nil
		}
		if errors.Is(err, ErrRecordTooLong) {
			return 0, tooLong(n + 2) // the rows' lines, at least (a row may hold line breaks)
		}
		var perr *csv.ParseError
		if err != nil && !errors.As(err, &perr) {
			return 0, err
		}
		capped.allow(cr.InputOffset())
		n++
		if n%50_000 == 0 {
			progress(cr.InputOffset())
		}
	}
}
