#!/bin/sh
echo up > /workspace/status.txt
