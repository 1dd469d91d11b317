package mcp

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/draftfs/draftfs/protocol/mcp/internal/reference"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/draftfs/draftfs/overlay/agent"
)

// readOutput is what read_text_file adds to the reference's structured
// output: facts about the whole file, whatever part was read.
var readOutput = map[string]any{
	"size":      map[string]any{"type": "integer", "description": "Size of the whole file in bytes"},
	"mtime":     map[string]any{"type": "string", "description": "Modification time (RFC 3339)"},
	"sha256":    map[string]any{"type": "string", "description": "SHA-256 of the whole file, hex"},
	"truncated": map[string]any{"type": "boolean", "description": "Whether head or tail left lines out"},
}

// infoOutput is what get_file_info adds to the reference's structured
// output.
var infoOutput = map[string]any{
	"size":   map[string]any{"type": "integer"},
	"mtime":  map[string]any{"type": "string", "description": "Modification time (RFC 3339)"},
	"sha256": map[string]any{"type": "string", "description": "SHA-256 of a regular file's content, hex"},
}

// mediaOutputSchema is the reference's read_media_file output schema.
var mediaOutputSchema = map[string]any{
	"type": "object",
	"properties": map[string]any{
		"content": map[string]any{
			"type": "array",
			"items": map[string]any{"anyOf": []any{
				map[string]any{
					"type": "object",
					"properties": map[string]any{
						"type":     map[string]any{"type": "string", "enum": []string{"image", "audio"}},
						"data":     map[string]any{"type": "string"},
						"mimeType": map[string]any{"type": "string"},
					},
					"required":             []string{"type", "data", "mimeType"},
					"additionalProperties": false,
				},
				map[string]any{
					"type": "object",
					"properties": map[string]any{
						"type": map[string]any{"type": "string", "const": "resource"},
						"resource": map[string]any{
							"type": "object",
							"properties": map[string]any{
								"uri":      map[string]any{"type": "string"},
								"mimeType": map[string]any{"type": "string"},
								"blob":     map[string]any{"type": "string"},
							},
							"required":             []string{"uri", "blob"},
							"additionalProperties": false,
						},
					},
					"required":             []string{"type", "resource"},
					"additionalProperties": false,
				},
			}},
		},
	},
	"required":             []string{"content"},
	"$schema":              draft07,
	"additionalProperties": false,
}

// binarySniff is how much of a file is looked at for a NUL byte, as git
// does to tell binary from text.
const binarySniff = 8000

func isBinary(b []byte) bool {
	return bytes.IndexByte(b[:min(len(b), binarySniff)], 0) >= 0
}

// readFile reads a whole file for a tool, with the size limit; a
// directory is Node's EISDIR on read.
func (s *Server) readFile(t target) ([]byte, error) {
	b, err := s.f.ReadFile(t.key, s.max)
	switch {
	case err == nil:
		return b, nil
	case errors.Is(err, agent.ErrTooLarge):
		size := "more"
		if info, err := s.f.Stat(t.key); err == nil {
			size = reference.FormatSize(info.Size)
		}
		return nil, errorf("File too large: %s is %s, over the %s limit for reading a file whole", t.abs, size, reference.FormatSize(s.max))
	case errnoOf(err) == syscall.EISDIR || s.isDir(t.key):
		return nil, errorf("EISDIR: illegal operation on a directory, read")
	}
	return nil, fsError(err, "open", t.abs)
}

// isDir reports whether key is a directory (Files.ReadFile's error for
// one need not carry EISDIR).
func (s *Server) isDir(key string) bool {
	info, err := s.f.Stat(key)
	return err == nil && info.IsDir()
}

// readText reads a text file: binary files are refused.
func (s *Server) readText(t target) ([]byte, error) {
	b, err := s.readFile(t)
	if err != nil {
		return nil, err
	}
	if isBinary(b) {
		return nil, errorf("Cannot read %s as text: it is a binary file (it contains NUL bytes); use read_media_file", t.abs)
	}
	return b, nil
}

func (s *Server) readTextFile(_ context.Context, a args) (*result, error) {
	t, err := s.validate(a.str("path"))
	if err != nil {
		return nil, err
	}
	head, tail := a.num("head"), a.num("tail")
	if head != 0 && tail != 0 {
		return nil, errorf("Cannot specify both head and tail parameters simultaneously")
	}
	b, err := s.readText(t)
	if err != nil {
		return nil, err
	}
	text, truncated := string(b), false
	switch {
	case tail != 0:
		text, truncated = tailLines(b, tail)
	case head != 0:
		text, truncated = headLines(b, head)
	}
	r := textResult(reference.JSText([]byte(text)))
	sum := sha256.Sum256(b)
	r.structured = map[string]any{"size": len(b), "sha256": hex.EncodeToString(sum[:]), "truncated": truncated}
	if info, err := s.f.Stat(t.key); err == nil {
		r.structured["mtime"] = info.ModTime.UTC().Format(time.RFC3339Nano)
	}
	return r, nil
}

// headLines is the reference's headFile: the first n lines (n rounded
// up), joined by "\n" without a final one, "\r" kept; nothing for n < 0.
func headLines(b []byte, n float64) (string, bool) {
	lines := strings.Split(string(b), "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	k := 0
	if n > 0 {
		k = int(min(math.Ceil(n), float64(len(lines))))
	}
	return strings.Join(lines[:k], "\n"), k < len(lines)
}

// tailChunk is the block size the reference's tailFile reads backwards.
const tailChunk = 1024

// tailLines is the reference's tailFile: it reads 1 KiB blocks from the
// end until it has seen n newlines, normalises CRLF, splits at "\n" and
// keeps the last n pieces (JavaScript's slice(-n)).
func tailLines(b []byte, n float64) (string, bool) {
	if len(b) == 0 {
		return "", false
	}
	pos, newlines := len(b), 0
	for pos > 0 && float64(newlines) < n {
		size := min(tailChunk, pos)
		pos -= size
		newlines += bytes.Count(b[pos:pos+size], []byte{'\n'})
	}
	text := strings.ReplaceAll(string(b[pos:]), "\r\n", "\n")
	pieces := strings.Split(text, "\n")
	total := strings.Count(strings.ReplaceAll(string(b), "\r\n", "\n"), "\n") + 1
	k := int(math.Trunc(n))
	switch {
	case n < 0:
		return "", true
	case k == 0:
		return text, len(pieces) < total
	}
	if k < len(pieces) {
		pieces = pieces[len(pieces)-k:]
	}
	return strings.Join(pieces, "\n"), len(pieces) < total
}

// mimeTypes are the reference's media types by extension.
var mimeTypes = map[string]string{
	".png": "image/png", ".jpg": "image/jpeg", ".jpeg": "image/jpeg", ".gif": "image/gif",
	".webp": "image/webp", ".bmp": "image/bmp", ".svg": "image/svg+xml",
	".mp3": "audio/mpeg", ".wav": "audio/wav", ".ogg": "audio/ogg", ".flac": "audio/flac",
}

func mimeTypeOf(p string) string {
	if m, ok := mimeTypes[strings.ToLower(filepath.Ext(p))]; ok {
		return m
	}
	return "application/octet-stream"
}

func (s *Server) readMediaFile(_ context.Context, a args) (*result, error) {
	t, err := s.validate(a.str("path"))
	if err != nil {
		return nil, err
	}
	b, err := s.readFile(t)
	if err != nil {
		return nil, err
	}
	mime := mimeTypeOf(t.abs)
	data := base64.StdEncoding.EncodeToString(b)
	var block sdk.Content
	var item map[string]any
	switch {
	case strings.HasPrefix(mime, "image/"):
		block = &sdk.ImageContent{Data: b, MIMEType: mime}
		item = map[string]any{"type": "image", "data": data, "mimeType": mime}
	case strings.HasPrefix(mime, "audio/"):
		block = &sdk.AudioContent{Data: b, MIMEType: mime}
		item = map[string]any{"type": "audio", "data": data, "mimeType": mime}
	default:
		uri := fileURL(t.abs)
		block = &sdk.EmbeddedResource{Resource: &sdk.ResourceContents{URI: uri, MIMEType: mime, Blob: b}}
		item = map[string]any{"type": "resource", "resource": map[string]any{"uri": uri, "mimeType": mime, "blob": data}}
	}
	return &result{content: []sdk.Content{block}, structured: map[string]any{"content": []any{item}}}, nil
}

func (s *Server) readMultipleFiles(_ context.Context, a args) (*result, error) {
	paths := a.strs("paths")
	parts := make([]string, len(paths))
	for i, p := range paths {
		b, err := func() ([]byte, error) {
			t, err := s.validate(p)
			if err != nil {
				return nil, err
			}
			return s.readText(t)
		}()
		if err != nil {
			parts[i] = fmt.Sprintf("%s: Error - %s", p, err.Error())
			continue
		}
		parts[i] = p + ":\n" + reference.JSText(b) + "\n"
	}
	return textResult(strings.Join(parts, "\n---\n")), nil
}

func (s *Server) getFileInfo(_ context.Context, a args) (*result, error) {
	t, err := s.validate(a.str("path"))
	if err != nil {
		return nil, err
	}
	info, err := s.f.Stat(t.key)
	if err != nil {
		return nil, fsError(err, "stat", t.abs)
	}
	// The merged view keeps one time per file (a draft entry's, a
	// buffer's or the disk's): it stands for creation and access too.
	when := reference.JSDate(info.ModTime)
	lines := []string{
		fmt.Sprintf("size: %d", info.Size),
		"created: " + when,
		"modified: " + when,
		"accessed: " + when,
		fmt.Sprintf("isDirectory: %v", info.IsDir()),
		fmt.Sprintf("isFile: %v", info.Mode.IsRegular()),
		fmt.Sprintf("permissions: %03o", info.Mode.Perm()),
	}
	r := &result{structured: map[string]any{"size": info.Size, "mtime": info.ModTime.UTC().Format(time.RFC3339Nano)}}
	if info.Mode.IsRegular() {
		if b, err := s.f.ReadFile(t.key, s.max); err == nil {
			sum := sha256.Sum256(b)
			r.structured["sha256"] = hex.EncodeToString(sum[:])
			lines = append(lines, "sha256: "+r.structured["sha256"].(string))
		}
	}
	r.text = strings.Join(lines, "\n")
	return r, nil
}
