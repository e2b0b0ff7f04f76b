. ./lib.sh
trap 'echo "got SIGTERM, ignoring it" >&3' TERM
echo "ATTEMPT ignore SIGTERM and outlive the timeout" >&3
i=0
while [ $i -lt 60 ]; do
	sleep 0.1
	i=$((i + 1))
done
proof "outlived the timeout by 4s"
echo "RC ignore SIGTERM and outlive the timeout 0" >&3
