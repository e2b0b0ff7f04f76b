#!/bin/sh
wget -qO /workspace/name.txt http://advisor:8500/ask
