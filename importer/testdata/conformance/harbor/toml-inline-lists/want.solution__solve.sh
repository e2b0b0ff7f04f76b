#!/bin/sh
echo done > /workspace/status.txt
