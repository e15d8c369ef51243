// The header of the part a.h includes.
#pragma once
