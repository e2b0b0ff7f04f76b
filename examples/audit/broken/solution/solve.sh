#!/bin/sh
# What the prompt asks for: the answer, 42.
echo 42 > answer.txt
