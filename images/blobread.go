package images

import (
	"context"
	"fmt"
	"io"

	contentapi "github.com/containerd/containerd/api/services/content/v1"
	"github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/core/content"
	"github.com/containerd/errdefs"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// sizedContent is the content of c read in one round trip per blob: the client's store asks
// containerd for a blob's Info (its size) before it reads it, where the descriptor a manifest
// or index names says its size already. A run's resolve reads two such blobs (its manifest
// and config) on the critical path. What comes back is checked against the descriptor's
// digest by readJSON, as any blob; a descriptor without a size goes through the client's store.
func sizedContent(c *client.Client) content.Provider {
	conn, ok := c.Conn().(grpc.ClientConnInterface)
	if !ok {
		return c.ContentStore()
	}
	return sizedProvider{client: contentapi.NewContentClient(conn), fallback: c.ContentStore()}
}

type sizedProvider struct {
	client   contentapi.ContentClient
	fallback content.Provider
}

func (p sizedProvider) ReaderAt(ctx context.Context, desc ocispec.Descriptor) (content.ReaderAt, error) {
	if desc.Size <= 0 {
		return p.fallback.ReaderAt(ctx, desc)
	}
	return &sizedReaderAt{ctx: ctx, desc: desc, client: p.client}, nil
}

type sizedReaderAt struct {
	ctx    context.Context
	desc   ocispec.Descriptor
	client contentapi.ContentClient
}

func (r *sizedReaderAt) Size() int64  { return r.desc.Size }
func (r *sizedReaderAt) Close() error { return nil }

func (r *sizedReaderAt) ReadAt(p []byte, off int64) (int, error) {
	ctx, cancel := context.WithCancel(r.ctx) // ends the stream however the read ends
	defer cancel()
	rc, err := r.client.Read(ctx, &contentapi.ReadContentRequest{Digest: r.desc.Digest.String(), Offset: off, Size: int64(len(p))})
	if err != nil {
		return 0, native(err)
	}
	n := 0
	for len(p) > 0 {
		resp, err := rc.Recv()
		if err == io.EOF {
			return n, io.EOF
		}
		if err != nil {
			return n, native(err)
		}
		m := copy(p, resp.Data)
		n += m
		p = p[m:]
	}
	return n, nil
}

// native is err with containerd's error kind for a missing blob (what the client's store
// returns), so callers tell a missing blob as before.
func native(err error) error {
	if status.Code(err) == codes.NotFound {
		return fmt.Errorf("%w: %s", errdefs.ErrNotFound, status.Convert(err).Message())
	}
	return err
}
