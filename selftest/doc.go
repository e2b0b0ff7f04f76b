// Package selftest is `ceval selftest`: a suite of attack tasks, embedded in the binary,
// whose agents are attack scripts paired with criteria that would reward the attack if it
// worked. Run puts each through supervisor.Run (the product path) with a fresh random
// canary in its grading material, and classifies it as blocked, detected or BREACH from the
// grade, ceval's own flags and the attack's log of what it attempted.
//
// The suite lives in attacks/NAME/ (task.yaml plus attack.sh, which sources lib.sh) so it
// also serves as examples of hostile tasks. The package never executes agent content on
// the host: it only reads the run directory that supervisor.Run leaves.
package selftest
