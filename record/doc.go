// Package record is the run record: result.json's schema (Result and the sections it
// holds), the statuses a run ends with and how they are decided, plan.json, the names of
// the files in a run directory and how they are written. supervisor writes it; report,
// regrade and the CLI read it. It imports no containerd, so reading results never pulls in
// the daemon's client.
package record
