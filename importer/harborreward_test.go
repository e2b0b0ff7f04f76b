package importer

import (
	"os"
	"path/filepath"
	"testing"
)

// A Harbor test.sh whose reward a program it starts writes would score 0 under
// harbor_reward (only test.sh's own shell's writes count): the import says so at the line of
// the file that writes it, and says nothing when test.sh (or a script it sources) does.
func TestRewardWrittenByAProgramTestShStartsIsReported(t *testing.T) {
	for _, c := range []struct {
		name   string
		files  map[string]string
		want   string
		wantLn int
	}{
		{"test.sh writes it", map[string]string{"test.sh": "pytest /tests/test_x.py && echo 1 > /logs/verifier/reward.txt || echo 0 > /logs/verifier/reward.txt\n", "grade.py": "# reward.txt is test.sh's\n"}, "", 0},
		{"a redirection of a program's output", map[string]string{"test.sh": "python3 /tests/grade.py > /logs/verifier/reward.json\n", "grade.py": "print('{}')  # to reward.json\n"}, "", 0},
		{"an EXIT trap", map[string]string{"test.sh": "trap 'echo $r > $OUT' EXIT\nr=1\n", "grade.py": "x = 'reward.txt'\n"}, "", 0},
		{"a sourced script", map[string]string{"test.sh": ". /tests/check.sh\n", "check.sh": "echo 1 > /logs/verifier/reward.txt\n"}, "", 0},
		{"a program writes it", map[string]string{"test.sh": "python3 /tests/grade.py\n", "grade.py": "import json\n\nopen('/logs/verifier/reward.json', 'w').write('{}')\n"}, "grade.py", 3},
		{"sh runs a script that writes it", map[string]string{"test.sh": "sh /tests/check.sh\n", "check.sh": "#!/bin/sh\necho 1 > /logs/verifier/reward.txt\n"}, "check.sh", 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			os.MkdirAll(filepath.Join(dir, "tests"), 0o755)
			for n, b := range c.files {
				os.WriteFile(filepath.Join(dir, "tests", n), []byte(b), 0o644)
			}
			file, line := rewardWriter(dir, []byte(c.files["test.sh"]))
			if c.want == "" && file != "" || c.want != "" && (file != filepath.Join(dir, "tests", c.want) || line != c.wantLn) {
				t.Errorf("rewardWriter = %s:%d, want %s:%d", file, line, c.want, c.wantLn)
			}
		})
	}
}
