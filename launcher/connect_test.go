package launcher

import "testing"

func TestDiscoverAddressPrefersEnvThenSystemThenPrivate(t *testing.T) {
	only := func(present ...string) func(string) bool {
		return func(p string) bool {
			for _, q := range present {
				if p == q {
					return true
				}
			}
			return false
		}
	}
	for _, tc := range []struct {
		name, env string
		exists    func(string) bool
		want      string
		private   bool
	}{
		{"env wins", "/x.sock", only(DefaultAddress, PrivateAddress), "/x.sock", false},
		{"system socket", "", only(DefaultAddress, PrivateAddress), DefaultAddress, false},
		{"only the private daemon", "", only(PrivateAddress), PrivateAddress, true},
		{"neither: the system socket's error", "", only(), DefaultAddress, false},
	} {
		got, why := DiscoverAddress(tc.env, tc.exists)
		if got != tc.want || (why != "") != tc.private {
			t.Errorf("%s: got %q (why %q), want %q (private %v)", tc.name, got, why, tc.want, tc.private)
		}
	}
}
