package transfers

import (
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"unicode/utf8"

	"golang.org/x/text/encoding/charmap"
	"golang.org/x/text/transform"

	"github.com/business-suite/suite/api/web"
	"github.com/business-suite/suite/models"
)

// upload is an import's file as the request stored it.
type upload struct {
	// size is the bytes sent; encoding what they were read as ("utf-8",
	// or "latin-1" for a file that is not UTF-8: read as Windows-1252,
	// Latin-1's superset that spreadsheets write).
	size     int64
	encoding string
	// header is a CSV's first row, and headerEnd the byte offset (in the
	// stored file) and line where its rows start.
	header           []string
	headerEnd, lines int64
}

// utf8BOM is the byte-order mark some spreadsheets put first.
var utf8BOM = []byte{0xEF, 0xBB, 0xBF}

// errTooLarge stops an upload over its plan's limit.
var errTooLarge = errors.New("too large")

// spoolUpload copies r, an import's file, to dst as the suite stores it:
// UTF-8 without its byte-order mark, a Latin-1 file converted (a file whose
// first MiB is not UTF-8 is read as Latin-1; one that is, but is not
// further on, is a 422). It holds at most a MiB, and stops at limit bytes
// (errTooLarge).
func spoolUpload(dst io.Writer, format string, r io.Reader, limit int64) (*upload, error) {
	counted := &countingReader{r: io.LimitReader(r, limit+1)}
	first := make([]byte, models.FilePartSize)
	n, err := io.ReadFull(counted, first)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return nil, err
	}
	first = first[:n]
	up := &upload{encoding: "utf-8", lines: 1}
	rest := io.Reader(counted)
	bom := bytes.HasPrefix(first, utf8BOM)
	if bom {
		first = first[len(utf8BOM):]
	}
	check := &utf8Check{}
	switch whole := trimPartialRune(first); {
	case utf8.Valid(whole):
		check.carry = append(check.carry, first[len(whole):]...)
	case bom:
		return nil, badFile("The file starts with UTF-8's byte-order mark but is not UTF-8.")
	default:
		up.encoding = "latin-1"
		first, _ = charmap.Windows1252.NewDecoder().Bytes(first)
		rest = transform.NewReader(rest, charmap.Windows1252.NewDecoder())
	}
	if format == models.FormatCSV {
		if err := up.readHeader(first); err != nil {
			return nil, err
		}
	}
	w := &countingWriter{w: dst}
	if _, err := w.Write(first); err != nil {
		return nil, err
	}
	buf := make([]byte, 256<<10)
	for {
		n, err := rest.Read(buf)
		if n > 0 {
			if up.encoding == "utf-8" && !check.valid(buf[:n]) {
				return nil, badFile(fmt.Sprintf("The file is not UTF-8 near byte %d, though it starts as UTF-8; save it as UTF-8 (or Latin-1) throughout.", w.Size))
			}
			if _, err := w.Write(buf[:n]); err != nil {
				return nil, err
			}
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
	}
	if counted.n > limit {
		return nil, errTooLarge
	}
	if len(check.carry) > 0 {
		return nil, badFile("The file ends inside a UTF-8 character.")
	}
	up.size = counted.n
	return up, nil
}

// readHeader reads a CSV's header row from the file's first bytes.
func (up *upload) readHeader(first []byte) error {
	cr := models.NewImportCSV(bytes.NewReader(first))
	cr.ReuseRecord = false
	header, err := cr.Read()
	var perr *csv.ParseError
	switch {
	case errors.Is(err, io.EOF):
		return badFile("The file is empty: a CSV starts with a header row naming its columns.")
	case errors.As(err, &perr):
		return badFile("The header row is not CSV: " + perr.Err.Error() + ".")
	case err != nil:
		return err
	}
	up.headerEnd = cr.InputOffset()
	if int(up.headerEnd) == len(first) && len(first) == models.FilePartSize {
		return badFile("The header row is longer than 1 MiB.")
	}
	for i := range header {
		header[i] = string(bytes.TrimSpace([]byte(header[i])))
	}
	up.header = header
	up.lines = 1 + int64(bytes.Count(first[:up.headerEnd], []byte{'\n'}))
	return nil
}

func badFile(why string) error {
	return models.Invalid(models.FieldError{Field: "file", Code: "invalid", Message: why})
}

// trimPartialRune is p without a UTF-8 character cut at its end.
func trimPartialRune(p []byte) []byte {
	for i := len(p) - 1; i >= 0 && i >= len(p)-utf8.UTFMax; i-- {
		if utf8.RuneStart(p[i]) {
			if !utf8.FullRune(p[i:]) {
				return p[:i]
			}
			break
		}
	}
	return p
}

// utf8Check checks a stream's UTF-8 a piece at a time, a character cut
// between two pieces carried to the next.
type utf8Check struct{ carry []byte }

func (c *utf8Check) valid(p []byte) bool {
	data := append(c.carry, p...)
	whole := trimPartialRune(data)
	c.carry = append([]byte(nil), data[len(whole):]...)
	return utf8.Valid(whole)
}

// countingWriter counts the bytes written through it.
type countingWriter struct {
	w    io.Writer
	Size int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.Size += int64(n)
	return n, err
}

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// webLimit is the 413 of an upload over its plan's limit.
func webLimit(limit int64) error {
	return web.NewProblem(413, "payload_too_large", fmt.Sprintf("The file exceeds this plan's import limit of %d MiB.", limit>>20)).
		WithExtensions(map[string]any{"limit": limit})
}
