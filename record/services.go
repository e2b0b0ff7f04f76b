package record

// ServicesDir is the run directory's subdirectory of service logs: ServicesDir/<name>.log
// holds a service's stdout and stderr, interleaved as written, capped and redacted.
const ServicesDir = "services"

// ServiceResult is one of the task's services as it ran beside the agent. Nothing here is
// read from the service's output.
type ServiceResult struct {
	Name    string `json:"name"`
	Image   string `json:"image"`
	Address string `json:"address"`         // the loopback address NAME resolves to in the agent's container
	Ports   []int  `json:"ports,omitempty"` // the ports the agent could reach
	// Ready says the readiness check passed (after ReadySeconds from the service's start);
	// a service that never became ready made the run ERROR before the agent started.
	Ready        bool    `json:"ready"`
	ReadySeconds float64 `json:"ready_seconds,omitempty"`
	ReadyTries   int64   `json:"ready_tries,omitempty"`
	// ExitCode is the service's own exit status when it exited before ceval stopped it
	// (ExitedEarly: it crashed or quit while the agent ran); nil when ceval stopped it.
	ExitCode    *int         `json:"exit_code,omitempty"`
	ExitedEarly bool         `json:"exited_early,omitempty"`
	OutputCut   bool         `json:"output_cut,omitempty"`
	Log         string       `json:"log"` // relative to the run directory
	Isolation   *Attestation `json:"isolation,omitempty"`
}
