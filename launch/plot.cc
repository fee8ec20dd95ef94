#include "launch/plot.h"
