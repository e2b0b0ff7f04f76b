#!/bin/sh
wget -qO /app/quote.txt http://quotes:5000/quote.txt
