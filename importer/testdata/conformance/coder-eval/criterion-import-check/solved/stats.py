import math
import statistics


def mean(xs):
    return statistics.fmean(xs) if xs else math.nan
