#!/bin/sh
echo terminates > /app/verdict.txt
