package client

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// BackupRequest asks the server for an operator backup of everything it
// stores (POST /v1/backups, operator only).
type BackupRequest struct {
	// To is the backup repository: a directory on the server's machine,
	// as an absolute path. Created if missing or empty; a repository the
	// server wrote before gets an incremental backup.
	To string `json:"to"`
	// MaxRate limits how fast the server reads, hashes and copies its
	// files into the repository, in MiB per second: nil means the
	// server's default (32), 0 no limit. A lower rate leaves the disk and
	// the cores to the server's writers; the backup takes longer.
	MaxRate *float64 `json:"max_rate_mib,omitempty"`
}

// BackupEvent is one line of a backup's answer: progress while it runs,
// then either Done or Error.
type BackupEvent struct {
	Progress *BackupProgress `json:"progress,omitempty"`
	Done     *BackupDone     `json:"done,omitempty"`
	Error    *ErrorBody      `json:"error,omitempty"`
}

// ErrorBody is an error inside a streamed answer.
type ErrorBody struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// BackupProgress is how far a backup is.
type BackupProgress struct {
	// Phase is "checkpoint" (copying the stores as of one moment),
	// "copy" (storing files in the repository) or "done".
	Phase       string `json:"phase"`
	Files       int    `json:"files"`
	Bytes       int64  `json:"bytes"`
	Done        int    `json:"done"`
	DoneBytes   int64  `json:"done_bytes"`
	Copied      int    `json:"copied"`
	CopiedBytes int64  `json:"copied_bytes"`
}

// BackupDone describes a backup that was written.
type BackupDone struct {
	ID   string `json:"id"`
	Repo string `json:"repository"`
	// Base is the backup whose files this one shares ("" for the first).
	Base           string `json:"base,omitempty"`
	ServerKeyCheck string `json:"server_key_check"`
	Files          int    `json:"files"`
	Bytes          int64  `json:"bytes"`
	// Copied and CopiedBytes are the files new to the repository.
	Copied      int     `json:"copied"`
	CopiedBytes int64   `json:"copied_bytes"`
	Tenants     int     `json:"tenants"`
	Seconds     float64 `json:"seconds"`
	// HeldSeconds is how long item writes were held off while the
	// stores were copied at one moment.
	HeldSeconds float64 `json:"writes_held_seconds"`
}

// Backup has the server write a backup of everything it stores into the
// repository req.To and calls progress (if not nil) as it advances. An
// Error event is returned as an *Error.
func (c *Client) Backup(ctx context.Context, req BackupRequest, progress func(BackupProgress)) (BackupDone, error) {
	var out BackupDone
	b, err := json.Marshal(req)
	if err != nil {
		return out, fmt.Errorf("client: %w", err)
	}
	hreq, err := http.NewRequestWithContext(ctx, "POST", strings.TrimRight(c.Endpoint, "/")+"/v1/backups", bytes.NewReader(b))
	if err != nil {
		return out, fmt.Errorf("client: %w", err)
	}
	hreq.Header.Set("Content-Type", "application/json")
	if err := c.authorize(ctx, hreq, c.Key); err != nil {
		return out, err
	}
	hc := c.HTTP
	if hc == nil {
		hc = &http.Client{} // NB: no overall timeout: a backup takes as long as it takes
	}
	resp, err := hc.Do(hreq)
	if err != nil {
		return out, fmt.Errorf("client: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 300 {
		data, _ := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
		return out, errorOf(resp.StatusCode, data)
	}
	br := bufio.NewReader(resp.Body)
	for {
		line, err := br.ReadBytes('\n')
		if len(bytes.TrimSpace(line)) > 0 {
			var ev BackupEvent
			if jerr := json.Unmarshal(line, &ev); jerr != nil {
				return out, fmt.Errorf("client: malformed backup stream: %w", jerr)
			}
			switch {
			case ev.Error != nil:
				return out, &Error{Status: http.StatusInternalServerError, Code: ev.Error.Code, Message: ev.Error.Message}
			case ev.Done != nil:
				return *ev.Done, nil
			case ev.Progress != nil && progress != nil:
				progress(*ev.Progress)
			}
		}
		if err == io.EOF {
			return out, fmt.Errorf("client: the backup stream ended before the backup was done")
		}
		if err != nil {
			return out, fmt.Errorf("client: reading the backup stream: %w", err)
		}
	}
}
