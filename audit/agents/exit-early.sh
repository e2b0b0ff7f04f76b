# starts the task's way (a first file the prompt names, empty) and is killed at once by its own signal
p=$(prompt_paths | head -n 1)
[ -n "$p" ] && parent_of "$p" && : > "$p"
kill -KILL $$
