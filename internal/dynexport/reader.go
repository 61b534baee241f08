package dynexport

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"crypto/md5"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
)

// Export is an export opened for reading.
type Export struct {
	// Dir is the export's directory (the one holding the manifests).
	Dir     string
	Summary Summary
	Files   []FileEntry
	// Definition is tenantdb-table.json, nil in exports not made by
	// tenantdb (DynamoDB's own).
	Definition *Definition
}

// Position is a place in an export's items: the next item to read is
// line Line (from 0) of data file File (from 0, in manifest order).
type Position struct {
	File int   `json:"file"`
	Line int64 `json:"line"`
}

// ErrIncomplete is returned by Open for an export without
// manifest-summary.json (still running, or interrupted).
var ErrIncomplete = errors.New("dynexport: no manifest-summary.json: the export is incomplete or this is not an export directory")

// Find returns the directories of the exports under root (root itself if
// it holds a manifest-summary.json), sorted.
func Find(root string) ([]string, error) {
	var dirs []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == DataDir && p != root {
			return filepath.SkipDir
		}
		if !d.IsDir() && d.Name() == SummaryFile {
			dirs = append(dirs, filepath.Dir(p))
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("dynexport: %w", err)
	}
	sort.Strings(dirs)
	return dirs, nil
}

// Open reads the manifests of the export in dir (the directory holding
// manifest-summary.json) and checks their checksums where present. It
// reads no data file.
func Open(dir string) (*Export, error) {
	sb, err := os.ReadFile(filepath.Join(dir, SummaryFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, ErrIncomplete
	}
	if err != nil {
		return nil, fmt.Errorf("dynexport: %w", err)
	}
	if err := checkManifest(dir, SummaryFile, sb); err != nil {
		return nil, err
	}
	x := &Export{Dir: dir}
	if x.Summary, err = ParseSummary(sb); err != nil {
		return nil, err
	}
	fb, err := os.ReadFile(filepath.Join(dir, FilesFile))
	if err != nil {
		return nil, fmt.Errorf("dynexport: %w", err)
	}
	if err := checkManifest(dir, FilesFile, fb); err != nil {
		return nil, err
	}
	if x.Files, err = ParseFiles(fb); err != nil {
		return nil, err
	}
	var n int64
	for _, f := range x.Files {
		n += f.ItemCount
	}
	if n != x.Summary.ItemCount {
		return nil, fmt.Errorf("dynexport: %s counts %d items, %s %d", FilesFile, n, SummaryFile, x.Summary.ItemCount)
	}
	db, err := os.ReadFile(filepath.Join(dir, DefinitionFile))
	switch {
	case err == nil:
		var d Definition
		if err := json.Unmarshal(db, &d); err != nil {
			return nil, fmt.Errorf("dynexport: %s: %w", DefinitionFile, err)
		}
		x.Definition = &d
	case !errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("dynexport: %w", err)
	}
	return x, nil
}

// checkManifest compares a manifest with its .checksum file (hex MD5), if
// there is one.
func checkManifest(dir, name string, data []byte) error {
	cb, err := os.ReadFile(filepath.Join(dir, strings.TrimSuffix(name, ".json")+checksumExt))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("dynexport: %w", err)
	}
	sum := md5.Sum(data)
	if want := strings.TrimSpace(string(cb)); !strings.EqualFold(want, fmt.Sprintf("%x", sum)) {
		return fmt.Errorf("dynexport: %s does not match its checksum file", name)
	}
	return nil
}

// ParseSummary parses manifest-summary.json. Errors: not JSON, another
// version or an output format other than DYNAMODB_JSON (ION is not read),
// a negative count.
func ParseSummary(b []byte) (Summary, error) {
	var s Summary
	if err := json.Unmarshal(b, &s); err != nil {
		return Summary{}, fmt.Errorf("dynexport: %s: %w", SummaryFile, err)
	}
	if s.Version != Version {
		return Summary{}, fmt.Errorf("dynexport: %s: version %q, want %q", SummaryFile, clip(s.Version), Version)
	}
	if s.OutputFormat != FormatDynamoDBJSON {
		return Summary{}, fmt.Errorf("dynexport: %s: output format %q; only %s exports can be read", SummaryFile, clip(s.OutputFormat), FormatDynamoDBJSON)
	}
	if s.ItemCount < 0 || s.BilledSizeBytes < 0 {
		return Summary{}, fmt.Errorf("dynexport: %s: negative count", SummaryFile)
	}
	return s, nil
}

// ParseFiles parses manifest-files.json (JSON lines). Errors: a line that
// is not a file entry, a negative count, a data file key that does not
// name a .json.gz file under data/.
func ParseFiles(b []byte) ([]FileEntry, error) {
	var out []FileEntry
	for i, line := range bytes.Split(b, []byte("\n")) {
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			continue
		}
		var fe FileEntry
		if err := json.Unmarshal(line, &fe); err != nil {
			return nil, fmt.Errorf("dynexport: %s line %d: %w", FilesFile, i+1, err)
		}
		if fe.ItemCount < 0 {
			return nil, fmt.Errorf("dynexport: %s line %d: negative itemCount", FilesFile, i+1)
		}
		if _, err := dataFileName(fe.DataFileS3Key); err != nil {
			return nil, fmt.Errorf("dynexport: %s line %d: %w", FilesFile, i+1, err)
		}
		out = append(out, fe)
	}
	return out, nil
}

// dataFileName returns the file name of a data file key
// (".../data/<name>.json.gz"), refusing anything that could leave the
// export's data directory.
func dataFileName(key string) (string, error) {
	dir, name := path.Split(key)
	if path.Base(strings.TrimSuffix(dir, "/")) != DataDir || !strings.HasSuffix(name, dataExt) || len(name) > 255 {
		return "", fmt.Errorf("data file key %q is not a %s file under %s/", clip(key), dataExt, DataDir)
	}
	for _, c := range name {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			return "", fmt.Errorf("data file key %q has a character outside [A-Za-z0-9._-]", clip(key))
		}
	}
	if strings.HasPrefix(name, ".") {
		return "", fmt.Errorf("data file key %q names a hidden file", clip(key))
	}
	return name, nil
}

// Scan calls fn with every item from position from on, in order: pos is
// the item's position, item the raw JSON of its "Item" member (valid JSON
// syntax; the caller parses the attribute values). Before reading a data
// file Scan checks its MD5 against md5Checksum; after reading it, its
// item count. fn's error stops the scan and is returned.
func (x *Export) Scan(from Position, fn func(pos Position, item []byte) error) error {
	if from.File < 0 || from.Line < 0 {
		return fmt.Errorf("dynexport: invalid position %+v", from)
	}
	for i := from.File; i < len(x.Files); i++ {
		fe := x.Files[i]
		name, err := dataFileName(fe.DataFileS3Key)
		if err != nil {
			return fmt.Errorf("dynexport: %w", err)
		}
		p := filepath.Join(x.Dir, DataDir, name)
		if err := checkMD5(p, fe.MD5Checksum); err != nil {
			return err
		}
		skip := int64(0)
		if i == from.File {
			skip = from.Line
		}
		f, err := os.Open(p)
		if err != nil {
			return fmt.Errorf("dynexport: %w", err)
		}
		n, err := ReadData(f, func(line int64, item []byte) error {
			if line < skip {
				return nil
			}
			return fn(Position{File: i, Line: line}, item)
		})
		f.Close()
		if err != nil {
			return fmt.Errorf("dynexport: %s: %w", name, err)
		}
		if n != fe.ItemCount {
			return fmt.Errorf("dynexport: %s holds %d items, the manifest says %d", name, n, fe.ItemCount)
		}
	}
	return nil
}

func checkMD5(p, want string) error {
	if want == "" {
		return nil
	}
	f, err := os.Open(p)
	if err != nil {
		return fmt.Errorf("dynexport: %w", err)
	}
	defer f.Close()
	h := md5.New()
	if _, err := io.Copy(h, f); err != nil {
		return fmt.Errorf("dynexport: %w", err)
	}
	var sum [md5.Size]byte
	copy(sum[:], h.Sum(nil))
	if MD5Checksum(sum) != want {
		return fmt.Errorf("dynexport: %s does not match its md5Checksum", filepath.Base(p))
	}
	return nil
}

// ReadData reads a gzip-compressed data file from r and calls fn with each
// item line's number (from 0) and the raw JSON of its "Item" member. It
// returns the number of items. Errors: not gzip, a line longer than
// MaxLine, a line that is not {"Item": {...}}, fn's error.
func ReadData(r io.Reader, fn func(line int64, item []byte) error) (int64, error) {
	zr, err := gzip.NewReader(r)
	if err != nil {
		return 0, err
	}
	defer zr.Close()
	br := bufio.NewReaderSize(zr, 256<<10)
	var n int64
	var long []byte
	for {
		chunk, err := br.ReadSlice('\n')
		line := chunk
		if errors.Is(err, bufio.ErrBufferFull) {
			long = append(long[:0], chunk...)
			for errors.Is(err, bufio.ErrBufferFull) {
				if len(long) > MaxLine {
					return n, fmt.Errorf("line %d is longer than %d bytes", n+1, MaxLine)
				}
				chunk, err = br.ReadSlice('\n')
				long = append(long, chunk...)
			}
			line = long
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return n, err
		}
		if len(line) > MaxLine {
			return n, fmt.Errorf("line %d is longer than %d bytes", n+1, MaxLine)
		}
		if t := bytes.TrimSpace(line); len(t) > 0 {
			item, perr := ParseLine(t)
			if perr != nil {
				return n, fmt.Errorf("line %d: %w", n+1, perr)
			}
			if ferr := fn(n, item); ferr != nil {
				return n, ferr
			}
			n++
		}
		if errors.Is(err, io.EOF) {
			return n, nil
		}
	}
}

// ParseLine returns the raw JSON of the "Item" member of one data line
// {"Item": {...}}. Errors: not a JSON object with exactly that member
// holding an object.
func ParseLine(line []byte) ([]byte, error) {
	// NB: the fast path is the compact form DynamoDB and Writer write; it
	// still checks that the member is exactly one JSON value.
	if inner, ok := bytes.CutPrefix(line, []byte(`{"Item":`)); ok && len(inner) > 0 && inner[len(inner)-1] == '}' {
		inner = bytes.TrimSpace(inner[:len(inner)-1])
		if len(inner) > 1 && inner[0] == '{' && json.Valid(inner) {
			return inner, nil
		}
	}
	var v map[string]json.RawMessage
	if err := json.Unmarshal(line, &v); err != nil {
		return nil, errors.New(`not a JSON object {"Item": {...}}`)
	}
	item, ok := v["Item"]
	if !ok || len(v) != 1 {
		return nil, errors.New(`want exactly one member, "Item"`)
	}
	item = bytes.TrimSpace(item)
	if len(item) == 0 || item[0] != '{' {
		return nil, errors.New(`"Item" is not a JSON object`)
	}
	return item, nil
}

func clip(s string) string {
	if len(s) > 64 {
		return s[:64] + "..."
	}
	return s
}
