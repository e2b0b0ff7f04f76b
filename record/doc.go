// Package record is the run record: result.json's schema (Result and the sections it
// holds: the grade, the gateway's totals, the mocks' stats), the judge's calls (judge_calls.jsonl:
// JudgeCall, ReadJudgeCalls), the statuses a run ends with and
// how they are decided, plan.json, the names of the files in a run directory and how they are
// written. It is a leaf of plain types: grader, gateway and mockd fill its types (they import
// record, never the other way round), supervisor writes it, and report, regrade and the CLI
// read it without linking the run machinery or containerd.
package record
