package lake

import (
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"gocloud.dev/blob"
	"gocloud.dev/blob/fileblob"
	"gocloud.dev/gcerrors"
)

// Schemes are the bucket URL schemes a warehouse may name.
var Schemes = []string{"s3", "gs", "azblob", "file"}

// IsBucketURL reports whether s names an object-storage bucket (one of
// Schemes) rather than a local directory.
func IsBucketURL(s string) bool {
	u, err := url.Parse(s)
	if err != nil {
		return false
	}
	for _, sc := range Schemes {
		if u.Scheme == sc {
			return true
		}
	}
	return false
}

// Bucket is an object-storage bucket opened from a gocloud.dev/blob URL.
type Bucket struct {
	b *blob.Bucket
	// Scheme is the URL's scheme.
	Scheme string
	// Name is the bucket (the URL's host); empty for file://.
	Name string
	// Prefix is the key prefix every key is under (the URL's "prefix"
	// parameter), "" or ending in "/".
	Prefix string
	// Query is the URL's query without "prefix": the driver's options
	// (region, endpoint, ...). Never credentials: those come from the
	// provider's standard chain.
	Query url.Values
	// Dir is the root directory of a file:// bucket; "" otherwise.
	Dir string
}

// ErrBadBucketURL is wrapped by every refusal of a bucket URL.
var ErrBadBucketURL = errors.New("unusable bucket URL")

// OpenBucket opens a bucket URL: s3://bucket?region=..., gs://bucket,
// azblob://container, file:///abs/dir. The optional "prefix" parameter
// puts every key under a prefix (it must end in "/"). Credentials are
// never part of the URL: each driver uses its provider's standard chain
// (AWS: environment, shared config and SSO, web identity, instance role;
// GCP: application default credentials; Azure: environment, workload or
// managed identity, CLI).
func OpenBucket(ctx context.Context, rawURL string) (*Bucket, error) {
	u, q, prefix, err := parseBucketURL(rawURL)
	if err != nil {
		return nil, err
	}
	bk := &Bucket{Scheme: u.Scheme, Name: u.Host, Prefix: prefix, Query: q}
	switch u.Scheme {
	case "file":
		bk.Dir = filepath.Clean(filepath.FromSlash(u.Path))
		if err := os.MkdirAll(bk.Dir, 0o755); err != nil {
			return nil, fmt.Errorf("bucket %s: %w", bk, err)
		}
		// No sidecar metadata files (Iceberg's orphan scan would see
		// them) and temporary files beside their targets (one device).
		b, err := fileblob.OpenBucket(bk.Dir, &fileblob.Options{NoTempDir: true, Metadata: fileblob.MetadataDontWrite})
		if err != nil {
			return nil, fmt.Errorf("bucket %s: %w", bk, err)
		}
		bk.b = b
	default: // s3, gs, azblob
		open := *u
		open.RawQuery = q.Encode()
		b, err := blob.OpenBucket(ctx, open.String())
		if err != nil {
			return nil, fmt.Errorf("bucket %s: %w", bk, err)
		}
		bk.b = b
	}
	if prefix != "" {
		bk.b = blob.PrefixedBucket(bk.b, prefix)
	}
	return bk, nil
}

// CheckBucketURL refuses a bucket URL that OpenBucket would refuse,
// without opening or creating anything: a run checks its --warehouse URL
// before it extracts, not when it publishes.
func CheckBucketURL(rawURL string) error {
	_, _, _, err := parseBucketURL(rawURL)
	return err
}

// parseBucketURL checks rawURL and returns it, its driver options (the
// query without "prefix") and its key prefix.
func parseBucketURL(rawURL string) (*url.URL, url.Values, string, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, nil, "", fmt.Errorf("%w: %v", ErrBadBucketURL, err)
	}
	if u.User != nil {
		return nil, nil, "", fmt.Errorf("%w: %s: credentials do not belong in the URL (use the provider's standard chain)", ErrBadBucketURL, u.Scheme+"://"+u.Host)
	}
	q := u.Query()
	prefix := q.Get("prefix")
	if prefix != "" && (!strings.HasSuffix(prefix, "/") || strings.HasPrefix(prefix, "/") || strings.Contains(prefix, "..")) {
		return nil, nil, "", fmt.Errorf("%w: prefix %q must be relative and end in \"/\"", ErrBadBucketURL, prefix)
	}
	q.Del("prefix")
	switch u.Scheme {
	case "file":
		if u.Host != "" || !filepath.IsAbs(filepath.FromSlash(u.Path)) {
			return nil, nil, "", fmt.Errorf("%w: %s: a file bucket is file:///absolute/path", ErrBadBucketURL, rawURL)
		}
		if len(q) > 0 {
			return nil, nil, "", fmt.Errorf("%w: %s: a file bucket takes no options but prefix", ErrBadBucketURL, rawURL)
		}
	case "s3", "gs", "azblob":
		if u.Host == "" || (u.Path != "" && u.Path != "/") {
			return nil, nil, "", fmt.Errorf("%w: %s://%s%s: name the bucket as the host and a key prefix with ?prefix=dir/", ErrBadBucketURL, u.Scheme, u.Host, u.Path)
		}
		if !slices.Contains(blob.DefaultURLMux().BucketSchemes(), u.Scheme) {
			return nil, nil, "", fmt.Errorf("%w: %s://%s/: the %s driver is not linked into this program (import github.com/kandev/kandev-extract/lake/clouds)", ErrBadBucketURL, u.Scheme, u.Host, u.Scheme)
		}
	default:
		return nil, nil, "", fmt.Errorf("%w: %q: the scheme must be one of %s", ErrBadBucketURL, rawURL, strings.Join(Schemes, ", "))
	}
	return u, q, prefix, nil
}

// String names the bucket without its options.
func (b *Bucket) String() string {
	if b.Scheme == "file" {
		return "file://" + filepath.ToSlash(b.Dir) + "/" + b.Prefix
	}
	return b.Scheme + "://" + b.Name + "/" + b.Prefix
}

// URI is the URI of key for engines that address objects directly (Iceberg
// metadata, Trino, Spark): s3://bucket/prefix/key, file:///dir/prefix/key.
func (b *Bucket) URI(key string) string {
	if b.Scheme == "file" {
		return "file://" + filepath.ToSlash(filepath.Join(b.Dir, filepath.FromSlash(b.Prefix+key)))
	}
	if b.Scheme == "azblob" {
		// Iceberg addresses Azure as abfs://<container>@<account>.dfs.<domain>/.
		account := cmp.Or(b.Query.Get("storage_account"), os.Getenv("AZURE_STORAGE_ACCOUNT"))
		domain := strings.TrimPrefix(cmp.Or(b.Query.Get("domain"), os.Getenv("AZURE_STORAGE_DOMAIN"), "blob.core.windows.net"), "blob.")
		return "abfs://" + b.Name + "@" + account + ".dfs." + domain + "/" + b.Prefix + key
	}
	return b.Scheme + "://" + b.Name + "/" + b.Prefix + key
}

// KeyOf is the inverse of URI: the key of a URI inside this bucket, or ok
// false.
func (b *Bucket) KeyOf(uri string) (key string, ok bool) {
	root := b.URI("")
	key, ok = strings.CutPrefix(uri, root)
	if !ok || key == "" || strings.Contains("/"+key+"/", "/../") {
		return "", false
	}
	return key, true
}

// Blob is the underlying gocloud bucket (keys are under Prefix already).
func (b *Bucket) Blob() *blob.Bucket { return b.b }

// Close releases the bucket.
func (b *Bucket) Close() error { return b.b.Close() }

// ErrExists is returned by CreateExclusive when the key already exists.
var ErrExists = errors.New("object already exists")

// CreateExclusive writes data at key only if nothing is there: S3
// If-None-Match: *, the GCS and Azure equivalents through gocloud's
// IfNotExist, and on a file bucket a link(2) of a complete, synced
// temporary file, which fails atomically if the name exists (gocloud's
// fileblob checks then renames, which two processes can race). Either the
// whole object appears or none: a killed writer leaves no object. An
// existing key gives ErrExists.
func (b *Bucket) CreateExclusive(ctx context.Context, key string, data []byte, contentType string) error {
	if b.Dir != "" {
		return b.linkExclusive(key, data)
	}
	w, err := b.b.NewWriter(ctx, key, &blob.WriterOptions{IfNotExist: true, ContentType: contentType})
	if err != nil {
		return err
	}
	if _, err := w.Write(data); err != nil {
		w.Close()
		return err
	}
	if err := w.Close(); err != nil {
		if gcerrors.Code(err) == gcerrors.FailedPrecondition {
			return fmt.Errorf("%s: %w", key, ErrExists)
		}
		return err
	}
	return nil
}

// localPath is a file bucket's path of key, refusing keys that would leave
// it.
func (b *Bucket) localPath(key string) (string, error) {
	clean := path.Clean(b.Prefix + key)
	if !fs.ValidPath(clean) || clean == "." {
		return "", fmt.Errorf("key %q is not a valid path", key)
	}
	return filepath.Join(b.Dir, filepath.FromSlash(clean)), nil
}

func (b *Bucket) linkExclusive(key string, data []byte) (err error) {
	final, err := b.localPath(key)
	if err != nil {
		return err
	}
	dir := filepath.Dir(final)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	var rnd [6]byte
	rand.Read(rnd[:])
	tmp := filepath.Join(dir, "."+filepath.Base(final)+"."+hex.EncodeToString(rnd[:])+".tmp")
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	defer os.Remove(tmp)
	if _, err := io.Copy(f, bytes.NewReader(data)); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Link(tmp, final); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("%s: %w", key, ErrExists)
		}
		return err
	}
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
	return nil
}

// ReadSmall reads a whole object of at most limit bytes.
func (b *Bucket) ReadSmall(ctx context.Context, key string, limit int64) ([]byte, error) {
	r, err := b.b.NewReader(ctx, key, nil)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	data, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("%s: larger than %d bytes", key, limit)
	}
	return data, nil
}

// IsNotFound reports whether err says an object does not exist.
func IsNotFound(err error) bool { return gcerrors.Code(err) == gcerrors.NotFound }

// ListNames lists the names directly under dir (a key prefix ending in
// "/"): objects and sub-"directories" (without the trailing "/").
func (b *Bucket) ListNames(ctx context.Context, dir string) (objects, dirs []string, err error) {
	it := b.b.List(&blob.ListOptions{Prefix: dir, Delimiter: "/"})
	for {
		o, err := it.Next(ctx)
		if errors.Is(err, io.EOF) {
			return objects, dirs, nil
		}
		if err != nil {
			return nil, nil, err
		}
		name := strings.TrimPrefix(o.Key, dir)
		if o.IsDir {
			dirs = append(dirs, strings.TrimSuffix(name, "/"))
		} else {
			objects = append(objects, name)
		}
	}
}
