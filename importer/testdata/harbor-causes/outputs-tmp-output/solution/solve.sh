#!/bin/sh
mkdir -p /output
echo ydaer > /output/status.txt
echo 42 > /tmp/answer.txt
