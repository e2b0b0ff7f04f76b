package importer

import (
	"strings"
	"testing"
)

// TestReachReportsOnlyCallsToTheInternet feeds one file of a test or service to reachProblems:
// a call to an internet host or a model provider is reported at its line; a URL in a comment or
// a string never fetched, loopback, private and reserved addresses, and compose services are not.
func TestReachReportsOnlyCallsToTheInternet(t *testing.T) {
	services := map[string]bool{"main": true, "db": true}
	for _, c := range []struct {
		name, code string
		want       string // "LINE: words of the reason", "" for nothing reported
	}{
		{"curl of a host", "#!/bin/sh\ncurl -fsS https://example.com/x\n", "2: internet host example.com"},
		{"wget of a bare host", "#!/bin/sh\nwget -q shop.example.net\n", "2: internet host shop.example.net"},
		{"requests over lines", "import requests\nr = requests.post(\n    \"https://api.acme-widgets.io/v2\",\n    json={})\n", "3: internet host api.acme-widgets.io"},
		{"socket to a public address", "import socket\nsocket.create_connection((\"8.8.8.8\", 53))\n", "2: internet host 8.8.8.8"},
		{"JavaScript fetch", "const r = await fetch(`https://quotes.example.org/today`);\n", "1: internet host quotes.example.org"},
		{"computed host with hosts given", "import subprocess\ndef get(h):\n    subprocess.run([\"curl\", f\"http://{h}/\"])\nget(\"python.org\")\n", "3: http://{h}, a host given at run time"},
		{"anthropic SDK", "import anthropic\nc = anthropic.Anthropic()\n", "1: model provider's API (imports anthropic"},
		{"openai SDK in JavaScript", "import OpenAI from \"openai\";\n", "1: imports openai"},
		{"provider URL", "#!/bin/sh\ncurl https://api.openai.com/v1/responses -d @q.json\n", "2: calls api.openai.com"},
		{"provider URL in a client call", "import requests\nr = requests.post(\n    \"https://api.anthropic.com/v1/messages\", json={})\n", "3: calls api.anthropic.com"},
		{"provider key read", "import os\nkey = os.getenv(\"GEMINI_API_KEY\")\n", "2: reads GEMINI_API_KEY"},
		{"another API's key", "const k = process.env.WEATHER_API_KEY;\n", "1: reads WEATHER_API_KEY, the key of an API on the internet"},
		{"URL in a comment", "#!/bin/sh\n# curl https://example.com/x to compare\ncurl http://db:5432/ # not https://example.com\n", ""},
		{"URL in a string never fetched", "DOCS = \"https://docs.example.org/\"\nprint(DOCS)\n", ""},
		{"loopback and private", "#!/bin/sh\ncurl http://localhost:8000/ http://127.0.0.1/ http://[::1]:9/ http://10.1.2.3/ http://0.0.0.0:80/\n", ""},
		{"reserved names", "#!/bin/sh\ncurl http://app.localhost/ http://web.test/ http://x.internal/\n", ""},
		{"compose service", "import requests\nrequests.get(\"http://db:5432/health\")\n", ""},
		{"computed host, only services named", "import urllib.request\nfor h in [\"db\", \"localhost\"]:\n    urllib.request.urlopen(f\"http://{h}:8000/\")\n", ""},
		{"a name that starts like an SDK", "import openai_compat_schema\n", ""},
		{"SDK pointed at a local mock", "from openai import OpenAI\nc = OpenAI(base_url=\"http://127.0.0.1:9100/v1\")\n", ""},
		{"file names are not hosts", "import subprocess\nsubprocess.run([\"curl\", \"-o\", \"out.json\", \"http://db/\"])\n", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := reachProblems("f", "tests", false, []byte(c.code), services, nil)
			if c.want == "" {
				if len(got) != 0 {
					t.Fatalf("reported %v, want nothing", got)
				}
				return
			}
			line, words, _ := strings.Cut(c.want, ": ")
			if len(got) != 1 || !strings.HasPrefix(got[0].String(), "f:"+line+": unmapped: tests: ") || !strings.Contains(got[0].Reason, words) {
				t.Fatalf("reported %v, want one problem at line %s saying %q", got, line, words)
			}
			if !strings.Contains(got[0].Reason, "verifier_network: host") && !strings.Contains(got[0].Reason, "model gateway") {
				t.Errorf("%q says neither verifier_network: host nor the model gateway", got[0].Reason)
			}
		})
	}
}
