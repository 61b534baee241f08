package dynexport

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"crypto/md5"
	"crypto/rand"
	"encoding/base32"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"
)

// WriterOptions describe the export a Writer writes.
type WriterOptions struct {
	// ExportID names the export's directory (AWSDynamoDB/<ExportID>); AWS
	// uses "<14 digits>-<8 hex>" (NewExportID).
	ExportID string
	// ExportArn, TableArn and TableID go into the summary as they are.
	ExportArn, TableArn, TableID string
	// Bucket and Prefix are the summary's s3Bucket and s3Prefix; Prefix
	// is also the path under the Writer's directory ("" for none).
	Bucket, Prefix string
	// Start and ExportTime are the summary's startTime and exportTime
	// (the time of the snapshot).
	Start, ExportTime time.Time
	// MaxFileBytes starts a new data file once a file holds this many
	// uncompressed bytes; 0 means 64 MiB.
	MaxFileBytes int64
	// Definition, if set, is written as tenantdb-table.json.
	Definition *Definition
}

// Writer writes one export. Add items, then Close; on error Abort.
// NB: manifest-summary.json is written last, so an export without it is
// incomplete and Open refuses it.
type Writer struct {
	o     WriterOptions
	dir   string // the export's directory
	files []FileEntry
	items int64
	bytes int64

	f    *os.File
	hash hash.Hash
	gz   *gzip.Writer
	buf  *bufio.Writer
	name string
	n    int64 // items in the current file
	size int64 // uncompressed bytes in the current file
}

// NewExportID returns an export id of AWS's form: milliseconds since the
// epoch (14 digits) and 8 random hex digits.
func NewExportID(now time.Time) string {
	var b [4]byte
	rand.Read(b[:])
	return fmt.Sprintf("%014d-%s", now.UnixMilli(), hex.EncodeToString(b[:]))
}

// ValidExportID reports whether id can name an export directory: 1 to 64
// letters, digits, '-' and '_'.
func ValidExportID(id string) bool {
	if id == "" || len(id) > 64 {
		return false
	}
	for _, c := range id {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

// Create starts an export under bucketDir (the directory standing for the
// bucket): it creates <bucketDir>/<Prefix>/AWSDynamoDB/<ExportID>/ with
// its _started file. Errors: an invalid id or prefix, an existing export
// directory, file system errors.
func Create(bucketDir string, o WriterOptions) (*Writer, error) {
	if !ValidExportID(o.ExportID) {
		return nil, fmt.Errorf("dynexport: invalid export id %q", o.ExportID)
	}
	if err := CheckPrefix(o.Prefix); err != nil {
		return nil, err
	}
	if o.MaxFileBytes <= 0 {
		o.MaxFileBytes = 64 << 20
	}
	dir := filepath.Join(bucketDir, filepath.FromSlash(o.Prefix), ExportsDir, o.ExportID)
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return nil, fmt.Errorf("dynexport: %w", err)
	}
	if err := os.Mkdir(dir, 0o755); err != nil {
		return nil, fmt.Errorf("dynexport: %w", err)
	}
	if err := os.Mkdir(filepath.Join(dir, DataDir), 0o755); err != nil {
		return nil, fmt.Errorf("dynexport: %w", err)
	}
	if err := writeFile(filepath.Join(dir, StartedFile), nil); err != nil {
		return nil, err
	}
	return &Writer{o: o, dir: dir}, nil
}

// CheckPrefix returns an error unless p is a relative slash-separated
// path without empty, "." or ".." segments or backslashes ("" is fine).
func CheckPrefix(p string) error {
	if p == "" {
		return nil
	}
	if len(p) > 1024 || strings.ContainsAny(p, "\\\x00") || strings.HasPrefix(p, "/") {
		return fmt.Errorf("dynexport: invalid prefix %q", p)
	}
	for _, seg := range strings.Split(strings.TrimSuffix(p, "/"), "/") {
		if seg == "" || seg == "." || seg == ".." {
			return fmt.Errorf("dynexport: invalid prefix %q", p)
		}
	}
	return nil
}

// Dir returns the export's directory.
func (w *Writer) Dir() string { return w.dir }

// keyPrefix is the S3 key of the export's directory.
func (w *Writer) keyPrefix() string {
	return path.Join(strings.TrimSuffix(w.o.Prefix, "/"), ExportsDir, w.o.ExportID)
}

// Add appends one item: item is the JSON object of its attributes in
// DynamoDB JSON, size its DynamoDB size in bytes (summed into
// billedSizeBytes). item must not contain a newline.
func (w *Writer) Add(item []byte, size int64) error {
	if bytes.IndexByte(item, '\n') >= 0 {
		return errors.New("dynexport: item contains a newline")
	}
	if w.f == nil {
		if err := w.openFile(); err != nil {
			return err
		}
	}
	w.buf.WriteString(`{"Item":`)
	w.buf.Write(item)
	if _, err := w.buf.WriteString("}\n"); err != nil {
		return fmt.Errorf("dynexport: %w", err)
	}
	w.n++
	w.items++
	w.bytes += size
	w.size += int64(len(item)) + 10
	if w.size >= w.o.MaxFileBytes {
		return w.closeFile()
	}
	return nil
}

var fileNames = base32.StdEncoding.WithPadding(base32.NoPadding)

func (w *Writer) openFile() error {
	var b [16]byte
	rand.Read(b[:])
	w.name = strings.ToLower(fileNames.EncodeToString(b[:])) + dataExt
	f, err := os.OpenFile(filepath.Join(w.dir, DataDir, w.name), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return fmt.Errorf("dynexport: %w", err)
	}
	w.f, w.hash = f, md5.New()
	w.gz, _ = gzip.NewWriterLevel(io.MultiWriter(f, w.hash), gzip.BestSpeed) // NB: any level reads the same
	w.buf = bufio.NewWriterSize(w.gz, 256<<10)
	w.n, w.size = 0, 0
	return nil
}

func (w *Writer) closeFile() error {
	if w.f == nil {
		return nil
	}
	f := w.f
	w.f = nil
	err := errors.Join(w.buf.Flush(), w.gz.Close())
	if err == nil {
		err = f.Sync()
	}
	err = errors.Join(err, f.Close())
	if err != nil {
		return fmt.Errorf("dynexport: %w", err)
	}
	var sum [md5.Size]byte
	copy(sum[:], w.hash.Sum(nil))
	w.files = append(w.files, FileEntry{
		ItemCount: w.n, MD5Checksum: MD5Checksum(sum), ETag: ETag(sum),
		DataFileS3Key: w.keyPrefix() + "/" + DataDir + "/" + w.name,
	})
	return nil
}

// Items returns the number of items added so far.
func (w *Writer) Items() int64 { return w.items }

// Close finishes the last data file and writes the manifests (and the
// definition), the summary last, with end as its endTime. It returns the
// summary.
func (w *Writer) Close(end time.Time) (Summary, error) {
	if err := w.closeFile(); err != nil {
		return Summary{}, err
	}
	if w.o.Definition != nil {
		b, err := json.MarshalIndent(w.o.Definition, "", "  ")
		if err != nil {
			return Summary{}, fmt.Errorf("dynexport: %w", err)
		}
		if err := writeFile(filepath.Join(w.dir, DefinitionFile), append(b, '\n')); err != nil {
			return Summary{}, err
		}
	}
	var files bytes.Buffer
	for _, fe := range w.files {
		b, _ := json.Marshal(fe)
		files.Write(b)
		files.WriteByte('\n')
	}
	if err := writeManifest(filepath.Join(w.dir, FilesFile), files.Bytes()); err != nil {
		return Summary{}, err
	}
	s := Summary{
		Version: Version, ExportArn: w.o.ExportArn,
		StartTime: FormatTime(w.o.Start), EndTime: FormatTime(end), ExportTime: FormatTime(w.o.ExportTime),
		TableArn: w.o.TableArn, TableID: w.o.TableID, S3Bucket: w.o.Bucket,
		ManifestFilesS3Key: w.keyPrefix() + "/" + FilesFile,
		BilledSizeBytes:    w.bytes, ItemCount: w.items, OutputFormat: FormatDynamoDBJSON,
	}
	if w.o.Prefix != "" {
		p := w.o.Prefix
		s.S3Prefix = &p
	}
	b, err := json.Marshal(s)
	if err != nil {
		return Summary{}, fmt.Errorf("dynexport: %w", err)
	}
	if err := writeManifest(filepath.Join(w.dir, SummaryFile), b); err != nil {
		return Summary{}, err
	}
	return s, syncDir(w.dir)
}

// Abort removes what the Writer wrote.
func (w *Writer) Abort() {
	if w.f != nil {
		w.f.Close()
		w.f = nil
	}
	os.RemoveAll(w.dir)
}

// writeManifest writes a manifest and its .checksum file (the hex MD5 of
// the manifest's bytes).
func writeManifest(name string, data []byte) error {
	sum := md5.Sum(data)
	if err := writeFile(strings.TrimSuffix(name, ".json")+checksumExt, []byte(hex.EncodeToString(sum[:]))); err != nil {
		return err
	}
	return writeFile(name, data)
}

// writeFile writes data to name durably (a temporary file synced, then
// renamed).
func writeFile(name string, data []byte) error {
	tmp := name + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return fmt.Errorf("dynexport: %w", err)
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, name)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("dynexport: %w", err)
	}
	return nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("dynexport: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("dynexport: %w", err)
	}
	return nil
}
