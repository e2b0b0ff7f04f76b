#!/bin/sh
wget -qO /app/name.txt http://advisor:8500/ask
