#!/bin/sh
echo hello | rev > /workspace/greeting.txt
