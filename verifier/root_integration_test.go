package verifier

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// A verifier is root of its own user namespace over a writable copy of the image's root:
// it installs a tool into /usr/local (files chowned, modes set, as a package manager does)
// and runs it; the next criterion's copy is pristine again.
func TestRootVerifierInstallsIntoItsOwnCopyOfTheImage(t *testing.T) {
	e, _, ctx := newExecutor(t)
	if !e.Root() {
		t.Fatal("verifiers do not run as root of their user namespace on a rootful daemon")
	}
	s := snap(t, map[string]string{"answer.txt": "42\n"})
	install := `set -e; [ "$(id -u)" = 0 ]; mkdir -p /usr/local/bin /etc/tool
printf '#!/bin/sh\necho installed %s\n' "$(cat answer.txt)" > /usr/local/bin/tool
chmod 4755 /usr/local/bin/tool; chown 100:100 /usr/local/bin/tool; echo conf > /etc/tool/conf
rm /bin/true 2>/dev/null || rm -f /usr/bin/true
/usr/local/bin/tool`
	want := "installed 42"
	c := container(install)
	c.StdoutScoring().ExpectedStdout = &want
	r, err := e.Run(ctx, c, s, nil)
	if err != nil {
		t.Fatal(err)
	}
	if r.ExitCode != 0 || strings.TrimSpace(string(r.Stdout)) != want {
		t.Fatalf("install as root: exit %d, stdout %q, stderr %q", r.ExitCode, r.Stdout, r.Stderr)
	}
	r, err = e.Run(ctx, container(`test ! -e /usr/local/bin/tool && test ! -e /etc/tool && command -v true`), s, nil)
	if err != nil {
		t.Fatal(err)
	}
	if r.ExitCode != 0 {
		t.Errorf("the next criterion's root is not the image's: exit %d, %s%s", r.ExitCode, r.Stdout, r.Stderr)
	}
}

// What root writes to its copy of the image is capped (the criterion's disk_mb): a 100 MiB
// file in /usr stops at the cap instead of filling the host's disk.
func TestRootVerifierWritesAreCapped(t *testing.T) {
	e, _, ctx := newExecutor(t)
	s := snap(t, map[string]string{"a": "a"})
	c := container(`dd if=/dev/zero of=/usr/big bs=1M count=100 2>/dev/null; echo $(( $(wc -c < /usr/big) >> 20 ))`)
	r, err := e.Run(ctx, c, s, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := strconv.Atoi(strings.TrimSpace(string(r.Stdout))); err != nil || got > 64 {
		t.Errorf("root wrote %q MiB into its copy of /usr, over the 64 MiB cap (stderr %q)", r.Stdout, r.Stderr)
	}
}

// rootAttack is what root of a verifier tries against the host; each success prints BREACH.
const rootAttack = `b() { echo "BREACH: $*"; }
mkdir -p /tmp/m /tmp/n
mount -t tmpfs x /tmp/m 2>/dev/null && b "mounted a tmpfs"
mount -o bind /tmp/n /tmp/m 2>/dev/null && b "bind-mounted a directory"
mount -t proc proc /tmp/m 2>/dev/null && b "mounted a proc"
mknod /tmp/blk b 7 0 2>/dev/null && b "made a block device node"
mknod /tmp/chr c 1 1 2>/dev/null && b "made /dev/mem's node"
for d in /dev/vda /dev/sda /dev/nvme0n1 /dev/loop0 /dev/mem /dev/kmsg /dev/port; do
	head -c 1 "$d" >/dev/null 2>&1 && b "read $d"
done
r1=$(stat -L -c %d:%i /proc/1/root/ 2>/dev/null) && [ "$r1" != "$(stat -c %d:%i /)" ] && b "reached another root through /proc/1/root"
grep -qs . /proc/1/environ && [ "$(cat /proc/1/comm)" != "$(cat /proc/$$/comm)" ] && ! grep -qs ceval /proc/1/cmdline && b "read the host init's environment"
echo 1 > /proc/sys/vm/drop_caches 2>/dev/null && b "wrote a host sysctl"
echo x > "$HOST_FILE" 2>/dev/null && b "wrote a file outside its copy"
for f in /task/tests/probe /reference/probe; do [ -d "${f%/*}" ] && { : > "$f"; } 2>/dev/null && b "wrote $f"; done
ip link add dummy0 type dummy 2>/dev/null && b "made a network device"
(exec 3>/.ceval/supervisor) 2>/dev/null && b "opened the supervisor's lifeline for writing"
(echo x >> /.ceval/init) 2>/dev/null && b "wrote the init"
kill -9 1 2>/dev/null; sleep 0.2; kill -0 1 2>/dev/null || b "killed the init"
echo done
`

// Root of a verifier cannot reach the host: no mount, no device node, no host device, no
// other root through /proc/1, no sysctl, no host file, no read-only grading material. The
// same script as host root in a mount and PID namespace of its own (no user namespace)
// breaches: the user namespace is what holds.
func TestRootVerifierCannotReachTheHost(t *testing.T) {
	e, _, ctx := newExecutor(t)
	hostFile := filepath.Join(t.TempDir(), "host-file")
	if err := os.WriteFile(hostFile, []byte("host\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s := snap(t, map[string]string{"attack.sh": rootAttack})
	r, err := e.Run(ctx, container("HOST_FILE="+hostFile+" sh attack.sh"), s, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(r.Stdout), "done") || strings.Contains(string(r.Stdout), "BREACH") {
		t.Errorf("root in the verifier:\n%s%s", r.Stdout, r.Stderr)
	}
	if b, _ := os.ReadFile(hostFile); string(b) != "host\n" {
		t.Errorf("the host file was written: %q", b)
	}
	// The control: host root with its own mount and PID namespaces but no user namespace.
	dir := t.TempDir()
	script := strings.ReplaceAll(rootAttack, "/tmp/", dir+"/")
	out, err := exec.Command("unshare", "--mount", "--pid", "--fork", "--mount-proc", "--propagation", "private",
		"env", "HOST_FILE="+hostFile, "sh", "-c", script).CombinedOutput()
	if err != nil {
		t.Fatalf("control: %v\n%s", err, out)
	}
	for _, want := range []string{"BREACH: mounted a tmpfs", "BREACH: made a block device node", "BREACH: wrote a file outside its copy"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("the control (no user namespace) lacks %q: the attack tests nothing\n%s", want, out)
		}
	}
}

// dpkg, as root of the verifier, installs a package into its copy of a Debian image (its
// database under /var/lib/dpkg, files in /usr, owners set from the archive) and the
// package's tool runs: what a test.sh's apt-get install does once it has the .deb.
func TestRootVerifierInstallsADebianPackage(t *testing.T) {
	v := toolchainVerifier(t)
	e, _, ctx := newExecutor(t)
	pkg := filepath.Join(t.TempDir(), "pkg")
	for p, content := range map[string]string{
		"DEBIAN/control":           "Package: ceval-probe\nVersion: 1.0\nArchitecture: all\nMaintainer: ceval tests <tests@ceval.invalid>\nDescription: a tool a test installs\n",
		"usr/bin/ceval-probe":      "#!/bin/sh\necho probe installed\n",
		"usr/share/ceval/data.txt": "data\n",
	} {
		os.MkdirAll(filepath.Dir(filepath.Join(pkg, p)), 0o755)
		os.WriteFile(filepath.Join(pkg, p), []byte(content), 0o755)
	}
	deb := filepath.Join(t.TempDir(), "ceval-probe.deb")
	if out, err := exec.Command("dpkg-deb", "--root-owner-group", "--build", pkg, deb).CombinedOutput(); err != nil {
		t.Fatalf("dpkg-deb: %v\n%s", err, out)
	}
	data, err := os.ReadFile(deb)
	if err != nil {
		t.Fatal(err)
	}
	s := snap(t, map[string]string{"ceval-probe.deb": string(data)})
	c := container(`dpkg -i ceval-probe.deb >/dev/null && dpkg -s ceval-probe | grep -q 'Status: install ok installed' && stat -c %U /usr/bin/ceval-probe && ceval-probe`)
	vc := *v
	c.GraderTier().Verifier = &vc
	c.Execution().Timeout = 60 * time.Second
	r, err := e.Run(ctx, c, s, nil)
	if err != nil {
		t.Fatal(err)
	}
	if r.ExitCode != 0 || string(r.Stdout) != "root\nprobe installed\n" {
		t.Errorf("dpkg -i as the verifier's root: exit %d, stdout %q, stderr %q", r.ExitCode, r.Stdout, r.Stderr)
	}
}
