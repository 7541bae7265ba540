package models

import (
	"context"
	"errors"
	"fmt"
	"io"

	"gorm.io/gorm"
)

// FilePartSize is the size of a stored file's parts: an import's upload
// and an export's output are written and read a part at a time, so no
// process holds a whole file.
const FilePartSize = 1 << 20

// FilePart is one part of a stored file (an import's or an export's),
// numbered from 0.
type FilePart struct {
	FileID string `gorm:"primaryKey"`
	Seq    int    `gorm:"primaryKey"`
	OrgID  string
	Data   []byte
}

// FileWriter writes a stored file in parts of FilePartSize, each part
// inserted in its transaction once it is full (Close inserts the last).
type FileWriter struct {
	tx            *gorm.DB
	orgID, fileID string
	// Seq is the next part's number, Size the bytes written.
	Seq  int
	Size int64
	buf  []byte
}

// NewFileWriter writes file fileID of orgID in tx, from part seq on.
func NewFileWriter(tx *gorm.DB, orgID, fileID string, seq int) *FileWriter {
	return &FileWriter{tx: tx, orgID: orgID, fileID: fileID, Seq: seq, buf: make([]byte, 0, FilePartSize)}
}

// Write buffers p, inserting each part it fills.
func (w *FileWriter) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		take := min(len(p), FilePartSize-len(w.buf))
		w.buf = append(w.buf, p[:take]...)
		p = p[take:]
		if len(w.buf) == FilePartSize {
			if err := w.flush(); err != nil {
				return 0, err
			}
		}
	}
	w.Size += int64(n)
	return n, nil
}

// Close inserts what is buffered.
func (w *FileWriter) Close() error {
	if len(w.buf) == 0 {
		return nil
	}
	return w.flush()
}

func (w *FileWriter) flush() error {
	err := w.tx.Create(&FilePart{FileID: w.fileID, Seq: w.Seq, OrgID: w.orgID, Data: w.buf}).Error
	w.Seq++
	w.buf = make([]byte, 0, FilePartSize)
	return err
}

// fileReader reads a stored file of equal parts (FileWriter's) from an
// offset, a part at a time.
type fileReader struct {
	ctx    context.Context
	db     *gorm.DB
	fileID string
	seq    int
	buf    []byte
	// err is a failure to reach the offset, returned by the first Read.
	err error
}

// OpenFile reads stored file fileID from byte offset on, a part at a
// time (parts of FilePartSize, as FileWriter writes them).
func OpenFile(ctx context.Context, db *gorm.DB, fileID string, offset int64) io.Reader {
	r := &fileReader{ctx: ctx, db: db, fileID: fileID, seq: int(offset / FilePartSize)}
	if skip := int(offset % FilePartSize); skip > 0 {
		r.err = r.next()
		switch {
		case r.err == nil && skip <= len(r.buf):
			r.buf = r.buf[skip:]
		case r.err == nil || errors.Is(r.err, io.EOF):
			r.err = fmt.Errorf("file %s has no byte %d", fileID, offset)
		}
	}
	return r
}

func (r *fileReader) next() error {
	var part FilePart
	err := r.db.WithContext(r.ctx).Where("file_id = ? AND seq = ?", r.fileID, r.seq).Take(&part).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return io.EOF
	}
	if err != nil {
		return err
	}
	r.seq++
	r.buf = part.Data
	return nil
}

func (r *fileReader) Read(p []byte) (int, error) {
	if r.err != nil {
		return 0, r.err
	}
	for len(r.buf) == 0 {
		if err := r.next(); err != nil {
			return 0, err
		}
	}
	n := copy(p, r.buf)
	r.buf = r.buf[n:]
	return n, nil
}

// DeleteFile deletes stored file fileID.
func DeleteFile(tx *gorm.DB, fileID string) error {
	return tx.Where("file_id = ?", fileID).Delete(&FilePart{}).Error
}
