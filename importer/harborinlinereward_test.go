package importer

import "testing"

// Only a python3 -c "..." block that opens the reward once, for writing, and names it nowhere
// else is rewritten; anything else stays unmapped.
func TestInlineRewardShape(t *testing.T) {
	for text, want := range map[string]bool{
		"x=1\npython3 -c \"\nimport json\njson.dump({'a': $x}, open('/tmp/logs/verifier/reward.json', 'w'))\n\"\n":                     true,
		"python -c \"\nopen(\\\"/logs/verifier/reward.txt\\\", \\\"w\\\").write('1')\n\"\n":                                            false, // escaped quotes end the shell string early
		"python3 -c \"\nf = open('/tmp/logs/verifier/reward.json', 'w')\nf.write(open('/tmp/logs/verifier/reward.json').read())\n\"\n": false,
		"python3 -c \"\nimport json\nprint(json.load(open('/tmp/logs/verifier/reward.json')))\n\"\n":                                   false,
		"python3 -c \"import json; json.dump(1, open('/tmp/logs/verifier/reward.json', 'w'))\"\n":                                      false,
		"python3 -c \"\njson.dump(1, open('/tmp/logs/verifier/reward.json', 'w')) \" && echo\n":                                        false,
	} {
		if _, _, _, got := inlineReward(text); got != want {
			t.Errorf("%q: %v, want %v", text, got, want)
		}
	}
}
