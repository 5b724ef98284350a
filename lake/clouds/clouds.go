// Package clouds links the object-storage drivers a bucket URL may name
// besides file://: s3:// (AWS SDK v2), gs:// (Google Cloud) and azblob://
// (Azure). Import it for its side effect in a binary that publishes to or
// reads from object storage:
//
//	import _ "github.com/kandev/kandev-extract/lake/clouds"
//
// A binary that needs only one cloud imports that driver alone instead
// (e.g. gocloud.dev/blob/s3blob): the three SDKs together add about 47 MB
// to kandev-extract, S3 alone about 14 MB (docs/scale-out.md).
package clouds

import (
	_ "gocloud.dev/blob/azureblob" // azblob://
	_ "gocloud.dev/blob/gcsblob"   // gs://
	_ "gocloud.dev/blob/s3blob"    // s3://
)
