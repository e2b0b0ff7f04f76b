#!/bin/sh
mkdir -p /output
echo ready > /output/status.txt
echo 42 > /tmp/answer.txt
