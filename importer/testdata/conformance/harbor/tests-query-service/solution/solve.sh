#!/bin/sh
wget -qO- 'http://notes:5000/cgi-bin/set?42'
