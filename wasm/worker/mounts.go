package worker

import (
	"fmt"
	"io/fs"
	"strings"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/experimental/sysfs"

	"ceval.dev/ceval/wasm/wire"
)

// mounts is a run's filesystem: "/" holding only the mount points, /workspace, /tmp (this
// run's), /reference and /task when the request asks for them, and, for CPython, ceval's
// read-only /ceval site directory and CPython's own stdlib at /usr/local/lib.
func (st *workerState) mounts(req *wire.RunRequest, tmp *memFS, python bool) wazero.FSConfig {
	fsc := wazero.NewFSConfig().(sysfs.FSConfig).WithSysFSMount(st.root(req.Reference, req.Task, python), "/")
	fsc = fsc.(sysfs.FSConfig).WithSysFSMount(st.workspace, "/workspace")
	fsc = fsc.(sysfs.FSConfig).WithSysFSMount(tmp, "/tmp")
	for _, o := range st.outputs {
		if _, ok := inTmp(o.path); !ok {
			fsc = fsc.(sysfs.FSConfig).WithSysFSMount(o.fs, o.path) // read-only, as the workspace
		}
	}
	if req.Reference {
		fsc = fsc.(sysfs.FSConfig).WithSysFSMount(st.reference, "/reference")
	}
	if req.Task {
		fsc = fsc.(sysfs.FSConfig).WithSysFSMount(st.task, "/task")
	}
	switch {
	case req.PyLib:
		fsc = fsc.(sysfs.FSConfig).WithSysFSMount(st.pylib, "/ceval")
	case python:
		fsc = fsc.(sysfs.FSConfig).WithSysFSMount(st.cevalSite(), "/ceval")
	}
	if python && st.stdlib != nil {
		fsc = fsc.(sysfs.FSConfig).WithSysFSMount(st.stdlib, wire.PythonStdlibDir)
	}
	if python && req.Packages {
		fsc = fsc.(sysfs.FSConfig).WithSysFSMount(st.pkgs, wire.PythonPackagesDir)
	}
	return fsc
}

// root returns the read-only "/" with the mount points of one combination of mounts.
func (st *workerState) root(reference, task, python bool) *memFS {
	key := fmt.Sprint(b2i(reference) | b2i(task)<<1 | b2i(python)<<2)
	for _, o := range st.outputs {
		if _, ok := inTmp(o.path); !ok {
			key += "\x00" + o.path
		}
	}
	if r := st.roots[key]; r != nil {
		return r
	}
	r := newMemFS(1, false)
	for _, d := range []struct {
		name string
		on   bool
	}{{"workspace", true}, {"tmp", true}, {"reference", reference}, {"task", task}, {"ceval", python}, {wire.PythonStdlibDir[1:], python}} {
		if d.on {
			_ = r.put(d.name, fs.ModeDir|0o755, nil, "")
		}
	}
	for _, o := range st.outputs {
		if _, ok := inTmp(o.path); !ok {
			_ = r.put(o.path[1:], fs.ModeDir|0o755, nil, "") // its parents too
		}
	}
	r.readOnly = true
	st.roots[key] = r
	return r
}

// cevalSite is /ceval: ceval's Python site directory with its sitecustomize.
// siteInCeval is ceval's site directory inside the /ceval view.
var siteInCeval = strings.TrimPrefix(wire.PythonSiteDir, "/ceval/")

// sourcelessSite replaces ceval's site directory, once its sitecustomize is compiled, by
// one holding only the bytecode, as sitecustomize.pyc: with the source beside it, CPython
// looked for that bytecode under a pycache prefix when one was set (-X pycache_prefix,
// PYTHONPYCACHEPREFIX), and a forged .pyc there (/tmp is writable) ran instead of the
// guard (found by review; TestForgedBytecodeCannotReplaceCevalsSitecustomize). A
// sourceless module is only ever read from where it is.
func (st *workerState) sourcelessSite() error {
	n, errno := st.cevalFS.lookup(siteInCeval + "/__pycache__/sitecustomize." + pythonCacheTag + ".pyc")
	if errno != 0 {
		return fmt.Errorf("no compiled sitecustomize: errno %d", errno)
	}
	c := newMemFS(5, false)
	if err := c.put(siteInCeval+"/sitecustomize.pyc", 0o444, n.data, ""); err != nil {
		return err
	}
	c.readOnly = true
	st.cevalFS = c
	return nil
}

func (st *workerState) cevalSite() *memFS {
	if st.cevalFS == nil {
		c := newMemFS(5, false)
		_ = c.put(siteInCeval+"/sitecustomize.py", 0o444, []byte(pythonSitecustomize), "")
		c.readOnly = true
		st.cevalFS = c
	}
	return st.cevalFS
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
