package record

import (
	"fmt"
	"strings"
	"time"
)

// FinalStatus is a run's status from its grade and what happened to its agent; Run and
// Regrade both decide with it, so a regraded run keeps the status its agent earned. A model
// gateway budget exceeded (gw is result.json's gateway record, nil without a gateway) gives
// the budget's status, even when the agent also timed out; else a timeout gives TIMEOUT;
// else the grade stands. An ERROR grade (the task's criteria are broken) always stands.
// hits are the limits that decided it, for limits_hit; timeout is the task's.
func FinalStatus(graded string, agent AgentResult, gw *GatewayResult, timeout time.Duration) (status string, hits []string) {
	if graded == StatusError {
		return graded, nil
	}
	status = graded
	if agent.TimedOut {
		status = StatusTimeout
		hits = append(hits, fmt.Sprintf("timeout %s", timeout))
	}
	if st := gw.budgetStatus(); st != "" {
		status = st
		hits = append(hits, "model gateway budget: "+gw.ExceededLimit)
	}
	return status, hits
}

// budgetStatus is the run status the exceeded gateway budget imposes, or "" (also on nil).
func (g *GatewayResult) budgetStatus() string {
	if g == nil {
		return ""
	}
	switch g.Exceeded {
	case ExceededTurns:
		return StatusMaxTurns
	case ExceededTokens:
		return StatusTokenBudget
	case ExceededCost:
		return StatusCostBudget
	}
	return ""
}

// ProviderDownError says why the run is ERROR on ceval's side because of its model provider, or
// "" (also on nil): only when the provider was found down (no connection, a 5xx, or ceval's
// credential refused, after the retries) and no call was ever answered. Nothing the agent
// does brings that about: calls cut off by the run's end (the agent exited or was killed
// mid-call), answers it stopped reading, 429s its flood draws and 4xx its malformed requests
// draw are recorded in the gateway's totals and transcript, and the run keeps the status its
// agent earned; a provider that goes down after answering leaves the agent's status too.
func (g *GatewayResult) ProviderDownError() string {
	if g == nil || g.GatewayTotals.ProviderDown == 0 || g.Turns > 0 {
		return ""
	}
	return fmt.Sprintf("model gateway: the model provider was down (%d call(s) found no connection, a 5xx or ceval's credential refused, after the retries) and answered no call; see %s", g.GatewayTotals.ProviderDown, g.Log)
}

// AgentFailed reports whether a run's status is the agent's failure (its work graded
// FAILURE, or it was ended by its timeout or a model gateway budget), as opposed to
// SUCCESS, or an ERROR or NOT_GRADED on ceval's or the task's side.
func AgentFailed(status string) bool {
	switch status {
	case StatusFailure, StatusTimeout, StatusMaxTurns, StatusTokenBudget, StatusCostBudget:
		return true
	}
	return false
}

// StatusLimit names the limit that gave a run its status ("" when the grade stands): the
// model gateway budget exceeded, or the timeout.
func (r *Result) StatusLimit() string {
	if r.Status == r.Gateway.budgetStatus() && r.Status != "" {
		return "model gateway budget: " + r.Gateway.ExceededLimit
	}
	if r.Status == StatusTimeout {
		for _, h := range r.LimitsHit {
			if strings.HasPrefix(h, "timeout ") {
				return h
			}
		}
		return "timeout"
	}
	return ""
}
