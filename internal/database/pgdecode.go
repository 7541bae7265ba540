package database

import (
	"encoding/binary"
	"encoding/hex"
	"math"
	"reflect"
	"strings"
	"sync"
	"time"
	"unsafe"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
)

// A pgxColumn is where one result column goes in a row and how it gets
// there (findAllPgx): decode writes the common cases (text into a string, a binary
// uuid into a string, a binary timestamptz into a time.Time, integers,
// floats, booleans) straight into the field; everything else, and any
// value decode declines (NULL, an out-of-range time), goes through pgx's
// own scan plan for the field's type, as rows.Scan would.
//
// Why: rows.Scan plans every column of every query again and reaches each
// field through an interface and one or two wrapping plans. In a profile
// of the list under load, reading a 25-row page's rows took 19 % of the
// suite's CPU, two thirds of it in rows.Scan; decoded here, into strings
// from shared blocks (textArena), 8 % (docs/decisions.md, "Performance").
type pgxColumn struct {
	scanField
	decode func(raw []byte, field unsafe.Pointer, text *textArena) bool // nil: pgx's plan only
	// scanner: the field's own Scan method reads the column, NULL included;
	// any other field keeps its zero value for a NULL, as with GORM's Find.
	scanner bool
	oid     uint32          // the column's type
	format  int16           // and wire format
	plan    pgtype.ScanPlan // pgx's, made when first needed
}

// collectPgxRows is collectRows for pgx's rows: each column decoded as
// its pgxColumn says.
func collectPgxRows[T any](fields []scanField, out []T, rows pgx.Rows, typeMap *pgtype.Map) ([]T, error) {
	cols := pgxColumns(fields, rows.FieldDescriptions(), typeMap)
	var text textArena
	for rows.Next() {
		var zero T
		out = append(out, zero)
		row := unsafe.Pointer(&out[len(out)-1])
		for i, raw := range rows.RawValues() {
			c := &cols[i]
			if c.typ == nil {
				continue
			}
			if raw == nil && !c.scanner {
				continue // the row is new: the field is already zero
			}
			field := unsafe.Add(row, c.offset)
			if c.decode != nil && raw != nil && c.decode(raw, field, &text) {
				continue
			}
			if err := c.scan(typeMap, raw, field); err != nil {
				return nil, pgx.ScanArgError{ColumnIndex: i, FieldName: rows.FieldDescriptions()[i].Name, Err: err}
			}
		}
	}
	return out, nil
}

// scan is pgx's own scan of raw into the field.
func (c *pgxColumn) scan(typeMap *pgtype.Map, raw []byte, field unsafe.Pointer) error {
	dst := reflect.NewAt(c.typ, field).Interface()
	if c.plan == nil {
		c.plan = typeMap.PlanScan(c.oid, c.format, dst)
	}
	return c.plan.Scan(raw, dst)
}

func pgxColumns(fields []scanField, descs []pgconn.FieldDescription, typeMap *pgtype.Map) []pgxColumn {
	cols := make([]pgxColumn, len(fields))
	for i, f := range fields {
		cols[i] = pgxColumn{scanField: f, oid: descs[i].DataTypeOID, format: descs[i].Format}
		if f.typ == nil {
			continue
		}
		if cols[i].scanner = scansItself(f.typ); !cols[i].scanner {
			cols[i].decode = decoderFor(cols[i].oid, cols[i].format, f.typ, typeMap)
		}
	}
	return cols
}

// scansItself tells whether pgx would hand a value of type t to t's own
// Scan method (sql.Scanner, or one of pgtype's Scan* interfaces). Listing
// a type's methods is slow (reflect builds each one's signature): the
// answer is kept per type.
func scansItself(t reflect.Type) bool {
	if known, ok := selfScanning.Load(t); ok {
		return known.(bool)
	}
	p, scans := reflect.PointerTo(t), false
	for i := range p.NumMethod() {
		scans = scans || strings.HasPrefix(p.Method(i).Name, "Scan")
	}
	selfScanning.Store(t, scans)
	return scans
}

var selfScanning sync.Map // reflect.Type → bool

var timeType = reflect.TypeFor[time.Time]()

// decoderFor is the direct decoder of a column of type oid in format into
// a field of type t, or nil when there is none.
func decoderFor(oid uint32, format int16, t reflect.Type, typeMap *pgtype.Map) func([]byte, unsafe.Pointer, *textArena) bool {
	binaryFormat := format == pgtype.BinaryFormatCode
	switch {
	case t.Kind() == reflect.String:
		switch {
		case oid == pgtype.TextOID || oid == pgtype.VarcharOID || oid == pgtype.BPCharOID || oid == pgtype.NameOID:
			return decodeText // text's binary format is its text
		case oid == pgtype.UUIDOID && binaryFormat:
			return decodeUUID
		case oid == pgtype.UUIDOID:
			return decodeText
		}
	case t == timeType && oid == pgtype.TimestamptzOID && binaryFormat && defaultScanLocation(typeMap):
		return decodeTimestamptz
	case !binaryFormat:
		return nil
	case t.Kind() == reflect.Bool && oid == pgtype.BoolOID:
		return decodeBool
	case isInt(t.Kind()):
		switch oid {
		case pgtype.Int8OID:
			return decodeInt(8, t.Size())
		case pgtype.Int4OID:
			return decodeInt(4, t.Size())
		case pgtype.Int2OID:
			return decodeInt(2, t.Size())
		}
	case t.Kind() == reflect.Float64 && oid == pgtype.Float8OID:
		return decodeFloat8
	}
	return nil
}

// defaultScanLocation tells whether the connection's timestamptz codec
// leaves times in the local zone, as decodeTimestamptz does.
func defaultScanLocation(typeMap *pgtype.Map) bool {
	typ, ok := typeMap.TypeForOID(pgtype.TimestamptzOID)
	if !ok {
		return false
	}
	codec, ok := typ.Codec.(*pgtype.TimestamptzCodec)
	return ok && codec.ScanLocation == nil
}

func decodeText(raw []byte, field unsafe.Pointer, text *textArena) bool {
	*(*string)(field) = text.copy(raw)
	return true
}

// decodeUUID writes a binary uuid in its canonical text form, as pgx does.
func decodeUUID(raw []byte, field unsafe.Pointer, text *textArena) bool {
	if len(raw) != 16 {
		return false
	}
	*(*string)(field) = text.make(36, func(buf []byte) {
		hex.Encode(buf[0:8], raw[0:4])
		hex.Encode(buf[9:13], raw[4:6])
		hex.Encode(buf[14:18], raw[6:8])
		hex.Encode(buf[19:23], raw[8:10])
		hex.Encode(buf[24:36], raw[10:16])
		buf[8], buf[13], buf[18], buf[23] = '-', '-', '-', '-'
	})
	return true
}

// A textArena hands out a result's strings from shared blocks: one
// allocation for many strings instead of one each (a 25-row page has
// some 300). A block lives as long as any of its strings; the strings of
// a list page live and die together.
type textArena struct {
	block []byte
}

// textBlock is the size of the arena's blocks (a string longer than that
// gets a block of its own).
const textBlock = 8 << 10

// copy is string(b), from the arena.
func (a *textArena) copy(b []byte) string {
	return a.make(len(b), func(buf []byte) { copy(buf, b) })
}

// make is a string of n bytes that fill writes, from the arena. The bytes
// are never written again once fill returns.
func (a *textArena) make(n int, fill func(buf []byte)) string {
	if n == 0 {
		return ""
	}
	if cap(a.block)-len(a.block) < n {
		a.block = make([]byte, 0, max(textBlock, n))
	}
	start := len(a.block)
	a.block = a.block[:start+n]
	buf := a.block[start : start+n : start+n]
	fill(buf)
	return unsafe.String(unsafe.SliceData(buf), n)
}

// y2kMicros is 2000-01-01 UTC, PostgreSQL's epoch, in microseconds since
// Unix's.
const y2kMicros = 946_684_800 * 1_000_000

// The range of times pgx decodes (outside it, it reports an error).
var (
	firstTime = time.Date(-4713, 11, 24, 0, 0, 0, 0, time.UTC)
	endTime   = time.Date(294277, 1, 1, 0, 0, 0, 0, time.UTC)
)

// decodeTimestamptz is pgx's binary timestamptz decoding into time.Time:
// microseconds since 2000-01-01, as a local time. Times out of pgx's
// range, infinity among them, are declined (left to pgx, which reports
// them).
func decodeTimestamptz(raw []byte, field unsafe.Pointer, _ *textArena) bool {
	if len(raw) != 8 {
		return false
	}
	micros := int64(binary.BigEndian.Uint64(raw)) // ±infinity: the extreme int64s, out of range
	t := time.Unix(y2kMicros/1_000_000+micros/1_000_000, y2kMicros%1_000_000*1_000+micros%1_000_000*1_000)
	if t.Before(firstTime) || !t.Before(endTime) {
		return false
	}
	*(*time.Time)(field) = t
	return true
}

func decodeBool(raw []byte, field unsafe.Pointer, _ *textArena) bool {
	if len(raw) != 1 {
		return false
	}
	*(*bool)(field) = raw[0] == 1
	return true
}

func isInt(k reflect.Kind) bool {
	return k == reflect.Int || k == reflect.Int64 || k == reflect.Int32 || k == reflect.Int16
}

// decodeInt decodes a binary integer of size bytes into a signed integer
// field of fieldSize bytes, when every value fits.
func decodeInt(size int, fieldSize uintptr) func([]byte, unsafe.Pointer, *textArena) bool {
	if fieldSize < uintptr(size) {
		return nil
	}
	return func(raw []byte, field unsafe.Pointer, _ *textArena) bool {
		if len(raw) != size {
			return false
		}
		var v int64
		switch size {
		case 2:
			v = int64(int16(binary.BigEndian.Uint16(raw)))
		case 4:
			v = int64(int32(binary.BigEndian.Uint32(raw)))
		default:
			v = int64(binary.BigEndian.Uint64(raw))
		}
		switch fieldSize {
		case 2:
			*(*int16)(field) = int16(v)
		case 4:
			*(*int32)(field) = int32(v)
		default:
			*(*int64)(field) = v
		}
		return true
	}
}

func decodeFloat8(raw []byte, field unsafe.Pointer, _ *textArena) bool {
	if len(raw) != 8 {
		return false
	}
	*(*float64)(field) = math.Float64frombits(binary.BigEndian.Uint64(raw))
	return true
}
