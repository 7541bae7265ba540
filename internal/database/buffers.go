package database

import (
	"reflect"
	"sync"
)

// Page buffers. A list request reads its rows into a slice and converts
// them into a slice of response items; once the page is written, both go
// back to a pool per element type for the next page to reuse. For a 25-row
// page of contacts the two slices were two fifths of the bytes a GET
// allocated (docs/decisions.md, "Performance"). The caller that gives a
// slice back must not use it, or any row in it, afterwards.

// GetBuffer is an empty slice of E from the pool of E's buffers.
func GetBuffer[E any]() *[]E {
	if buf, ok := buffers(reflect.TypeFor[E]()).Get().(*[]E); ok {
		return buf
	}
	return new([]E)
}

// PutBuffer gives buf back to its pool with used, the slice it now holds,
// cleared first, so that a buffer waiting in the pool keeps no row's
// strings alive.
func PutBuffer[E any](buf *[]E, used []E) {
	clear(used)
	*buf = used[:0]
	buffers(reflect.TypeFor[E]()).Put(buf)
}

// bufferPools holds a sync.Pool of *[]E for each element type E.
var bufferPools sync.Map // reflect.Type → *sync.Pool

func buffers(elem reflect.Type) *sync.Pool {
	if p, ok := bufferPools.Load(elem); ok {
		return p.(*sync.Pool)
	}
	p, _ := bufferPools.LoadOrStore(elem, new(sync.Pool))
	return p.(*sync.Pool)
}
