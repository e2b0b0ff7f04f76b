package selftest

import (
	"fmt"

	"ceval.dev/ceval/record"
)

// gatewayEndpointAttempts is how many calls attacks/gateway-other-endpoints makes to paths
// the gateway does not serve (its attack.sh loops over that many).
const gatewayEndpointAttempts = 6

// checkGatewayRefusedEndpoints: the gateway answered every call to an endpoint it does not
// serve itself, and stripped the provider-side tool from the one model call.
func checkGatewayRefusedEndpoints(res *record.Result) string {
	g := res.Gateway
	switch {
	case g == nil:
		return "result.json has no gateway record"
	case g.Refused < gatewayEndpointAttempts:
		return fmt.Sprintf("the gateway refused %d call(s), want at least %d: a non-listed endpoint was served", g.Refused, gatewayEndpointAttempts)
	case g.StrippedTools < 1:
		return "the provider-side web_search tool was not stripped"
	case g.Turns > 1:
		return fmt.Sprintf("%d model answers, want at most the one replayed", g.Turns)
	}
	return ""
}

// Usage of the one answer in attacks/gateway-forged-usage/calls.jsonl.
const (
	forgedUsageInput  = 11
	forgedUsageOutput = 5
)

// checkGatewayUsage: the gateway's totals are what its one replayed answer said, whatever
// usage lines the agent printed.
func checkGatewayUsage(res *record.Result) string {
	g := res.Gateway
	if g == nil {
		return "result.json has no gateway record"
	}
	if g.Turns != 1 || g.InputTokens != forgedUsageInput || g.OutputTokens != forgedUsageOutput {
		return fmt.Sprintf("gateway totals are %d turn(s), %d in, %d out; the replayed answer was 1 turn, %d in, %d out",
			g.Turns, g.InputTokens, g.OutputTokens, forgedUsageInput, forgedUsageOutput)
	}
	return ""
}

// checkPluginUnchanged: every projected plugin tree hashed the same after the run.
func checkPluginUnchanged(res *record.Result) string {
	if len(res.Plugins) == 0 {
		return "result.json has no plugin record"
	}
	for _, p := range res.Plugins {
		if p.SHA256After == "" || p.SHA256After != p.SHA256Before {
			return fmt.Sprintf("plugin %s: tree digest %q before, %q after", p.Name, p.SHA256Before, p.SHA256After)
		}
	}
	return ""
}
