package supervisor

import (
	"testing"

	"ceval.dev/ceval/oci"
	"ceval.dev/ceval/sandbox"
	"ceval.dev/ceval/sandbox/local"
)

// Run starts the ID slot and the user namespace holder while it resolves the image: a run
// that fails there (its image is missing) must release both, or every such run would leak
// a slot (id_range runs dry) and a holder process running as the slot's IDs.
func TestRunThatFailsBeforeLaunchReleasesItsIDSlotAndHolder(t *testing.T) {
	ids := sandbox.IDRange{Start: sandbox.DefaultIDRange.Start + 1000*oci.IDRangeSize, Slots: 1}
	doc := agentTask("noimage", "true", "  - {type: file_exists, path: hello.txt}\n", "  image: ceval.local/no-such-image:test\n")
	res, err := runTask(t, doc, nil, Options{IDs: ids})
	if err == nil || res == nil || res.Status != "ERROR" {
		t.Fatalf("run of a missing image: %+v, %v; want an ERROR in prepare", res, err)
	}
	inUse, err := local.HostIDsInUse(ids.SlotOf)
	if err != nil {
		t.Fatal(err)
	}
	if len(inUse) != 0 {
		t.Errorf("processes still run as the slot's IDs after the run: %v", inUse)
	}
	slot, err := local.AllocateIDs(ids, local.IDLockDir)
	if err != nil {
		t.Fatalf("the run's only slot is still held: %v", err)
	}
	if err := slot.Release(); err != nil {
		t.Fatal(err)
	}
}
