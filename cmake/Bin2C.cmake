# cmake -DBIN2C=... -DNAME=... -DINPUT=... -DOUTPUT=... -P Bin2C.cmake:
# INPUT as a C array NAME in the header OUTPUT (CUDA's bin2c writes to
# stdout; this gives it a file without a shell).
execute_process(COMMAND ${BIN2C} --const --name ${NAME} ${INPUT}
  OUTPUT_FILE ${OUTPUT} RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "bin2c ${INPUT} failed: ${rc}")
endif()
