package snapshot

import (
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// benchTree writes ~2,000 small files over 40 directories plus four 2 MiB files, and
// returns the total bytes.
func benchTree(b *testing.B, root string) int64 {
	b.Helper()
	rng := rand.New(rand.NewPCG(1, 2))
	var total int64
	buf := make([]byte, 2<<20)
	for i := range buf {
		buf[i] = byte(rng.Uint32())
	}
	write := func(rel string, n int) {
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(p, buf[:n], 0o644); err != nil {
			b.Fatal(err)
		}
		total += int64(n)
	}
	for i := range 2000 {
		write(fmt.Sprintf("pkg%02d/sub%d/file%04d.go", i%40, i%3, i), 100+rng.IntN(8<<10))
	}
	for i := range 4 {
		write(fmt.Sprintf("data/blob%d.bin", i), 2<<20)
	}
	return total
}

// plainCopy is the baseline: what a `cp -a` in Go looks like with no defences, using the
// standard library's fast paths (io.Copy between files uses copy_file_range).
func plainCopy(src, dst string) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		target := filepath.Join(dst, rel)
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			return os.Mkdir(target, info.Mode().Perm())
		case d.Type()&fs.ModeSymlink != 0:
			link, err := os.Readlink(p)
			if err != nil {
				return err
			}
			return os.Symlink(link, target)
		case d.Type().IsRegular():
			in, err := os.Open(p)
			if err != nil {
				return err
			}
			defer in.Close()
			out, err := os.OpenFile(target, os.O_WRONLY|os.O_CREATE|os.O_EXCL, info.Mode().Perm())
			if err != nil {
				return err
			}
			if _, err := io.Copy(out, in); err != nil {
				out.Close()
				return err
			}
			return out.Close()
		}
		return nil
	})
}

// BenchmarkTake compares Take with plainCopy. SNAPSHOT_BENCH_DIR (e.g. /dev/shm) moves the
// tree off the default temp dir, to separate our CPU cost from the filesystem's.
func BenchmarkTake(b *testing.B) {
	base := b.TempDir()
	if d := os.Getenv("SNAPSHOT_BENCH_DIR"); d != "" {
		var err error
		if base, err = os.MkdirTemp(d, "snapshot-bench"); err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { os.RemoveAll(base) })
	}
	src := filepath.Join(base, "src")
	total := benchTree(b, src)
	out := filepath.Join(base, "out")
	if err := os.Mkdir(out, 0o755); err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		name string
		copy func(src, dst string) error
	}{
		{"snapshot", func(src, dst string) error {
			s, err := Take(src, dst, Limits{})
			if err == nil && (s.Truncated || len(s.Notes) != 0) {
				err = fmt.Errorf("unexpected notes %+v", s.Notes)
			}
			return err
		}},
		{"plaincopy", plainCopy},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(total)
			for i := 0; i < b.N; i++ {
				dst := filepath.Join(out, fmt.Sprintf("%s-%d", c.name, i))
				if err := c.copy(src, dst); err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				if err := os.RemoveAll(dst); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
			}
		})
	}
}

// BenchmarkTakePathShape is the path-shape workload of issue 14: PATHSHAPE_FILES (default
// 100,000) empty files with 255-byte names at depth 64 under 255-byte directory names, so
// the tree's paths sum to ~1.6 GB while its bytes are zero. One iteration takes the
// snapshot and writes and reloads its manifest; it reports the manifest's size and the
// process's peak RSS (getrusage; the tree is built through directory descriptors, which
// costs no memory to speak of). Run it with -benchtime 1x: the tree takes a while to build.
func BenchmarkTakePathShape(b *testing.B) {
	files := 100_000
	if v := os.Getenv("PATHSHAPE_FILES"); v != "" {
		if _, err := fmt.Sscan(v, &files); err != nil {
			b.Fatalf("PATHSHAPE_FILES=%q: %v", v, err)
		}
	}
	ws := b.TempDir()
	pathShape(b, ws, 63, files)
	out := b.TempDir()
	b.ResetTimer()
	var manifest int64
	for i := 0; i < b.N; i++ {
		dir := filepath.Join(out, fmt.Sprint(i))
		if err := os.Mkdir(dir, 0o700); err != nil {
			b.Fatal(err)
		}
		s, err := Take(ws, filepath.Join(dir, "workspace"), Limits{})
		if err != nil {
			b.Fatal(err)
		}
		m := filepath.Join(dir, "snapshot.json")
		if err := s.WriteManifest(m); err != nil {
			b.Fatal(err)
		}
		if _, err := Load(filepath.Join(dir, "workspace"), m); err != nil {
			b.Fatal(err)
		}
		fi, err := os.Stat(m)
		if err != nil {
			b.Fatal(err)
		}
		manifest = fi.Size()
		if i == 0 {
			b.Logf("%d entries, limits hit %q", len(s.Entries), s.LimitsHit)
		}
	}
	b.StopTimer()
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(manifest)/(1<<20), "manifest-MiB")
	b.ReportMetric(float64(ru.Maxrss)/1024, "peak-RSS-MiB")
}
