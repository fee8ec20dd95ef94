#include "learner/config.h"
