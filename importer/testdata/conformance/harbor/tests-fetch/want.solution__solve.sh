#!/bin/sh
echo hello > /workspace/hello.txt
