#!/bin/sh
wget -qO /workspace/notes.txt http://notes:7000/
