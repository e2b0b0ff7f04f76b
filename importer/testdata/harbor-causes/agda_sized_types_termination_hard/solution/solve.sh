#!/bin/sh
echo setanimret > /app/verdict.txt
