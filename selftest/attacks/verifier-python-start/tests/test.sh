# Harbor's tests as ceval import harbor runs them (harbor_reward: an unprivileged verifier over
# the image's read-only root, where no .pth of ceval's can be copied): reward 1 only when the
# agent's version is above 2.0, checked by the image's packaging under python3 -I.
cd /workspace
if python3 -I -c 'import sys; sys.path.insert(0, ""); from packaging.version import Version; sys.exit(0 if Version(open("answer.txt").read().strip()) > Version("2.0") else 1)'; then
	echo 1 > /tmp/logs/verifier/reward.txt
else
	echo 0 > /tmp/logs/verifier/reward.txt
fi
