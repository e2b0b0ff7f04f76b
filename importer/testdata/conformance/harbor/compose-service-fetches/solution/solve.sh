#!/bin/sh
wget -qO /app/notes.txt http://notes:7000/
