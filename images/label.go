package images

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/core/content"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// Label marks image ref isolation-ready: after a fresh preflight finds no setuid/setgid
// file and no file capability, it writes a new config carrying IsolationLabel, a new
// manifest pointing at it and the unchanged layers, and moves the image record to that
// manifest. An image that is already labeled is returned as it is. An image index is
// replaced by this platform's manifest.
func Label(ctx context.Context, c *client.Client, ref string) (Image, error) {
	rec, err := getRecord(ctx, c, ref)
	if err != nil {
		return Image{}, err
	}
	cs := c.ContentStore()
	r, err := resolve(ctx, cs, rec)
	if err != nil {
		return Image{}, err
	}
	rep, err := scan(ctx, cs, r)
	if err != nil {
		return Image{}, err
	}
	if len(rep.Dangerous) > 0 {
		var ss []string
		for _, f := range rep.Dangerous {
			ss = append(ss, f.String())
		}
		return Image{}, fmt.Errorf("%w: refusing to label image %s: it holds %d setuid/setgid or file-capability file(s): %s; remove them (chmod u-s,g-s FILE; setcap -r FILE) and import the image again",
			ErrNotRunnable, ref, len(rep.Dangerous), strings.Join(ss, "; "))
	}
	if rep.Labeled() {
		return r.image, nil
	}

	ctx, done, err := c.WithLease(ctx)
	if err != nil {
		return Image{}, err
	}
	defer done(context.WithoutCancel(ctx)) // released when the build is interrupted too

	oldCfg, err := content.ReadBlob(ctx, cs, r.configDesc)
	if err != nil {
		return Image{}, fmt.Errorf("label %s: read config: %w", ref, err)
	}
	newCfg, err := withConfigLabel(oldCfg, IsolationLabel, IsolationLabelValue)
	if err != nil {
		return Image{}, fmt.Errorf("label %s: %w", ref, err)
	}
	cfgDesc := newBlob(r.configDesc.MediaType, newCfg).desc
	// Keep the unpacked snapshot referenced from the config, as Unpack left it.
	cfgLabels := map[string]string{}
	if info, err := cs.Info(ctx, r.configDesc.Digest); err == nil {
		for k, v := range info.Labels {
			if strings.HasPrefix(k, "containerd.io/gc.ref.snapshot.") {
				cfgLabels[k] = v
			}
		}
	}
	if err := writeBlob(ctx, cs, "label-config-"+cfgDesc.Digest.Encoded(), newCfg, cfgDesc, cfgLabels); err != nil {
		return Image{}, fmt.Errorf("label %s: write config: %w", ref, err)
	}

	oldMan, err := content.ReadBlob(ctx, cs, r.manifestDesc)
	if err != nil {
		return Image{}, fmt.Errorf("label %s: read manifest: %w", ref, err)
	}
	var man map[string]json.RawMessage
	if err := json.Unmarshal(oldMan, &man); err != nil {
		return Image{}, fmt.Errorf("label %s: parse manifest: %w", ref, err)
	}
	cfgRef := r.manifest.Config
	cfgRef.Digest, cfgRef.Size = cfgDesc.Digest, cfgDesc.Size
	if man["config"], err = json.Marshal(cfgRef); err != nil {
		return Image{}, err
	}
	newMan, err := json.Marshal(man)
	if err != nil {
		return Image{}, err
	}
	manDesc := ocispec.Descriptor{MediaType: r.manifestDesc.MediaType, Digest: newBlob("", newMan).desc.Digest, Size: int64(len(newMan)), Platform: r.manifestDesc.Platform}
	manLabels := map[string]string{"containerd.io/gc.ref.content.config": cfgDesc.Digest.String()}
	for i, l := range r.manifest.Layers {
		manLabels[fmt.Sprintf("containerd.io/gc.ref.content.l.%d", i)] = l.Digest.String()
	}
	if err := writeBlob(ctx, cs, "label-manifest-"+manDesc.Digest.Encoded(), newMan, manDesc, manLabels); err != nil {
		return Image{}, fmt.Errorf("label %s: write manifest: %w", ref, err)
	}

	rec.Target = manDesc
	rec, err = c.ImageService().Update(ctx, rec, "target")
	if err != nil {
		return Image{}, fmt.Errorf("label %s: update image record: %w", ref, err)
	}
	if err := unpack(ctx, c, rec); err != nil {
		return Image{}, err
	}
	img := newImage(rec.Name, manDesc.Digest, cfgDesc.Digest, r.config.Config.Labels) // only the isolation label changed
	img.Source = rec.Labels[SourceLabel]                                              // the record keeps where it came from
	return img, nil
}

// withConfigLabel sets config.Labels[key] in an image config, keeping every other field
// as it was (docker configs carry fields ocispec.Image does not know).
func withConfigLabel(raw []byte, key, value string) ([]byte, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(raw, &top); err != nil {
		return nil, fmt.Errorf("parse config: %w", err)
	}
	inner := map[string]json.RawMessage{}
	if b, ok := top["config"]; ok && !bytes.Equal(b, []byte("null")) {
		if err := json.Unmarshal(b, &inner); err != nil {
			return nil, fmt.Errorf("parse config.config: %w", err)
		}
	}
	labels := map[string]string{}
	if b, ok := inner["Labels"]; ok && !bytes.Equal(b, []byte("null")) {
		if err := json.Unmarshal(b, &labels); err != nil {
			return nil, fmt.Errorf("parse config labels: %w", err)
		}
	}
	labels[key] = value
	var err error
	if inner["Labels"], err = json.Marshal(labels); err != nil {
		return nil, err
	}
	if top["config"], err = json.Marshal(inner); err != nil {
		return nil, err
	}
	return json.Marshal(top)
}

// writeBlob stores data under desc and sets labels on it, also when it already existed.
func writeBlob(ctx context.Context, cs content.Store, ref string, data []byte, desc ocispec.Descriptor, labels map[string]string) error {
	if err := content.WriteBlob(ctx, cs, ref, bytes.NewReader(data), desc, content.WithLabels(labels)); err != nil {
		return err
	}
	if len(labels) == 0 {
		return nil
	}
	info := content.Info{Digest: desc.Digest, Labels: labels}
	var fields []string
	for k := range labels {
		fields = append(fields, "labels."+k)
	}
	_, err := cs.Update(ctx, info, fields...)
	return err
}
