#!/bin/sh
echo "olleh, $(cat /workspace/name.txt)" > /workspace/greeting.txt
