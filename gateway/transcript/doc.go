// Package transcript holds the model gateway's record formats: one line of model_calls.jsonl
// (Call, Usage), the replay fixtures the gateway answers from (a recorded transcript or a
// hand-written script of turns), and the bounded line and server-sent-event readers every
// reader of a transcript uses. It serves nothing and imports nothing of ceval's, so the task
// loader, toolcalls, atif and the reports read transcripts without the gateway's server.
package transcript
